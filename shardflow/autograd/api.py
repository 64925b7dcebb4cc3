"""Functional entry points of autograd: ``backward`` and ``grad`` (``torch.autograd``'s)."""

from __future__ import annotations

import warnings

import numpy as np

from ..backend import get_array_module
from ..backend.memory import tune_on_first_use
from .engine import run_backward
from .function import AccumulateGrad, Function
from .graph import GradientEdge
from .higher_order import run_backward_graph
from .sparse_grad import SparseGrad
from .tensor import Tensor, _wrap


def _seed_grads(tensors, grad_tensors):
    seeds = []
    for t, g in zip(tensors, grad_tensors):
        if not t.requires_grad:
            raise RuntimeError(
                f"element of shape {tuple(t.shape)} does not require grad and does not have a "
                "grad_fn; did you compute it under no_grad(), or forget requires_grad=True on "
                "the inputs?"
            )
        if g is None:
            if t.array.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, got a tensor of shape "
                    f"{tuple(t.shape)}; pass gradient=shardflow.ones_like(out) or reduce it "
                    "(out.sum().backward())"
                )
            xp = np if isinstance(t.array, np.ndarray) else None
            seeds.append(xp.ones_like(t.array) if xp else t.array * 0 + 1)
        else:
            ga = g.array if isinstance(g, Tensor) else np.asarray(g, dtype=t.array.dtype)
            if ga.shape != t.array.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output has shape {ga.shape} and output has shape "
                    f"{t.array.shape}; the gradient must have the output's shape"
                )
            seeds.append(ga)
    return seeds


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _input_list(inputs) -> list:
    """``grad``'s inputs as Tensors: a ``GradientEdge`` (graph.py) stands for the tensor it
    names: the leaf itself, or a Tensor linked to output ``output_nr`` of its node."""
    items = [inputs] if isinstance(inputs, GradientEdge) else _as_list(inputs)
    out = []
    for t in items:
        if isinstance(t, GradientEdge):
            node, k = t.node, t.output_nr
            if isinstance(node, AccumulateGrad):
                t = node.variable
            else:
                meta = node._out_meta
                shape, dtype = (node._out_shape, np.float32) if meta is None else meta[k]
                t = _wrap(np.zeros(shape, dtype), True, node, k)
        out.append(t)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's ``.grad``. ``create_graph=True``: the
    gradients are Tensors carrying their own graph (higher_order.py), so they can be
    differentiated again; ``retain_graph`` then defaults to True. ``grad_variables`` is
    torch's deprecated name of ``grad_tensors``."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning,
                      stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    tune_on_first_use()  # a training loop's allocator settings (backend/memory.py)
    if create_graph:
        return _backward_graph(tensors, grad_tensors, retain_graph, inputs)
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if inputs is not None:
        inputs = _as_list(inputs)
        got = grad(tensors, inputs, grads, retain_graph=retain_graph, allow_unused=True)
        for t, g in zip(inputs, got):
            if g is not None:
                # a copy: grad() may give two inputs one array (add's backward), or a
                # read-only broadcast view, and .grad is changed in place later
                t.grad = Tensor(g.array.copy()) if t.grad is None else Tensor(t.grad.array + g.array)
        return
    run_backward(tensors, _seed_grads(tensors, grads), bool(retain_graph))


def _capture_slots(inputs) -> tuple[dict, list]:
    """The engine's capture dict for the differentiated ``inputs`` (a leaf is its own key, an
    intermediate is ``(producer, output number)``) and the keys in the inputs' order."""
    capture: dict = {}
    keys = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (shape {tuple(t.shape)}) does not require grad")
        key = t if t.grad_fn is None else (t.grad_fn, t._output_nr)
        capture[key] = None
        keys.append(key)
    return capture, keys


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any ``.grad``. ``create_graph=True``:
    the returned gradients carry a graph (differentiable again; higher_order.py), and
    ``retain_graph`` defaults to True. ``is_grads_batched=True``: each grad_output has a
    leading batch dimension and the result is the stack of one vector-Jacobian product per
    batch entry — computed as a loop of backward passes over the retained graph (torch
    batches them with vmap; the values are the same). ``only_inputs`` is accepted and
    ignored, as in torch."""
    allow_unused = bool(materialize_grads) if allow_unused is None else allow_unused
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    if create_graph:
        return _grad_graph(outputs, inputs, grad_outputs, retain_graph, allow_unused,
                           materialize_grads)
    outputs = _as_list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _input_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    capture, keys = _capture_slots(inputs)
    run_backward(outputs, _seed_grads(outputs, grads), bool(retain_graph), capture=capture)
    result = []
    for t, key in zip(inputs, keys):
        g = capture[key]
        if g is None:
            if materialize_grads:
                g = np.zeros_like(t.array)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (shape {tuple(t.shape)}) appears to not "
                    "have been used in the graph; pass allow_unused=True if this is expected"
                )
        result.append(None if g is None else g.tensor() if type(g) is SparseGrad else Tensor(g))
    return tuple(result) if not single else tuple(result)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad(..., is_grads_batched=True)``: one ``grad`` per batch entry of the seeds, stacked."""
    seeds = _as_list(grad_outputs)
    if not seeds or any(not isinstance(g, Tensor) or g.ndim == 0 for g in seeds):
        raise RuntimeError("autograd.grad(is_grads_batched=True) needs grad_outputs: one Tensor per "
                           "output, each with a leading batch dimension")
    sizes = {int(g.shape[0]) for g in seeds}
    if len(sizes) != 1:
        raise RuntimeError(f"autograd.grad(is_grads_batched=True): the grad_outputs' batch sizes "
                           f"differ ({sorted(sizes)}); give every seed the same leading size")
    batch = sizes.pop()
    per_entry = []
    for b in range(batch):
        last = b == batch - 1
        per_entry.append(grad(outputs, inputs, [g[b] for g in seeds],
                              retain_graph=retain_graph if last else True,
                              create_graph=create_graph, allow_unused=allow_unused,
                              materialize_grads=materialize_grads))
    return tuple(None if entries[0] is None else _StackBatch.apply(*entries)
                 for entries in zip(*per_entry))


class _StackBatch(Function):
    """Stack the per-entry gradients of ``is_grads_batched`` along a new dimension 0 (a node of
    its own: autograd sits below the ops layer). Differentiable again: each input's gradient is
    its slice of the output's."""

    save_inputs = ()

    def forward(self, *arrays):
        return get_array_module(arrays[0]).stack(arrays)

    def backward(self, g):
        return tuple(g[i] for i in range(g.shape[0]))

    def backward_graph(self, g):
        return tuple(g[i] for i in range(g.shape[0]))


# ------------------------------------------------------------------ create_graph=True


def _seed_tensors(tensors, grad_tensors) -> list:
    """The seeds as Tensors: a given Tensor is kept (it may require grad: its graph joins
    the gradients'), anything else becomes a constant Tensor (``_seed_grads``' checks)."""
    arrays = _seed_grads(tensors, grad_tensors)
    return [g if isinstance(g, Tensor) else _wrap(a) for g, a in zip(grad_tensors, arrays)]


def _backward_graph(tensors, grad_tensors, retain_graph, inputs) -> None:
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    retain = True if retain_graph is None else bool(retain_graph)
    if inputs is not None:
        inputs = _as_list(inputs)
        got = _grad_graph(tensors, inputs, grads, retain, True, False)
        for t, g in zip(inputs, got):
            if g is not None:
                t.grad = g if t.grad is None else t.grad + g
        return
    run_backward_graph(tensors, _seed_tensors(tensors, grads), retain)


def _grad_graph(outputs, inputs, grad_outputs, retain_graph, allow_unused, materialize_grads):
    outputs = _as_list(outputs)
    inputs = _input_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    capture, keys = _capture_slots(inputs)
    retain = True if retain_graph is None else bool(retain_graph)
    run_backward_graph(outputs, _seed_tensors(outputs, grads), retain, capture=capture)
    result = []
    for t, key in zip(inputs, keys):
        g = capture[key]
        if g is None:
            if materialize_grads:
                g = _wrap(np.zeros_like(t.array) if isinstance(t.array, np.ndarray)
                          else t.array * 0)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (shape {tuple(t.shape)}) appears to not "
                    "have been used in the graph; pass allow_unused=True if this is expected"
                )
        result.append(g)
    return tuple(result)
