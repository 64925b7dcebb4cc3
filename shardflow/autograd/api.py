"""Functional entry points of autograd: ``backward`` and ``grad`` (``torch.autograd``'s)."""

from __future__ import annotations

import numpy as np

from .engine import run_backward
from .higher_order import run_backward_graph
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


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's ``.grad``. ``create_graph=True``: the
    gradients are Tensors carrying their own graph (higher_order.py), so they can be
    differentiated again; ``retain_graph`` then defaults to True."""
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


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any ``.grad``. ``create_graph=True``:
    the returned gradients carry a graph (differentiable again; higher_order.py), and
    ``retain_graph`` defaults to True."""
    if create_graph:
        return _grad_graph(outputs, inputs, grad_outputs, retain_graph, allow_unused,
                           materialize_grads)
    outputs = _as_list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    capture = {}
    keys = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (shape {tuple(t.shape)}) does not require grad")
        key = t if t.grad_fn is None else (t.grad_fn, t._output_nr)
        capture[key] = None
        keys.append(key)
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
        result.append(None if g is None else Tensor(g))
    return tuple(result) if not single else tuple(result)


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
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    capture = {}
    keys = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (shape {tuple(t.shape)}) does not require grad")
        key = t if t.grad_fn is None else (t.grad_fn, t._output_nr)
        capture[key] = None
        keys.append(key)
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
