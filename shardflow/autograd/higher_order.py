"""The ``create_graph=True`` backward pass: gradients that are Tensors with a graph.

``backward(create_graph=True)`` / ``autograd.grad(create_graph=True)`` come here instead of
``engine.run_backward``. The walk is the first-order engine's (seed the roots' slots, count
each node's incoming edges, process ready nodes LIFO, Kahn's algorithm), written as a plain
loop with no fast path, because here every step works on Tensors and records a graph:

* gradient slots hold Tensors; accumulation is the differentiable ``+``; a gradient whose
  shape is a broadcast of its input's is summed back with ``Tensor.sum`` (differentiable);
* a node that defines ``backward_graph(*grad_outputs)`` (function.py) is called with the
  output gradients as Tensors under grad mode ON: its result carries the graph that a
  second differentiation walks (through ``saved_input``/``saved_output`` it reaches the
  original graph, which is why ``retain_graph`` defaults to ``create_graph``);
* a node without it runs its array ``backward``; the results are linked to one
  ``NoDoubleBackward`` node whose inputs are the output gradients and the node's inputs
  that require grad. The first-order values are right; differentiating them again raises,
  naming the op (never a silent 0);
* hooks (tensor hooks on outputs and leaves, post-accumulate-grad hooks), ``capture`` for
  ``autograd.grad``, the saved-version check and anomaly mode's NaN check are the first-order
  engine's, on Tensors;
* a leaf's ``.grad`` becomes the gradient Tensor (with its graph) the first time, and
  ``.grad + g`` (out of place, differentiable) after, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module
from ..backend.fp_errors import enter_quiet, exit_quiet
from . import grad_mode
from .anomaly_mode import _flags as _anomaly_flags
from .anomaly_mode import check_gradients_for_nan
from .engine import _check_gradient_count, _check_versions, _collect_dependencies, _raise_freed
from .function import Function, edge_of
from .graph_hooks import NODE_HOOKS, call_backward, enter_task, exit_task
from .rebind import pending as _rebind_pending
from .rebind import substitute as _rebind_substitute
from .saved_hooks import UNPACK
from .tensor import Tensor, _wrap


class DoubleBackwardNotImplemented(RuntimeError):
    """Raised when a gradient computed through an op without ``backward_graph`` is
    differentiated again (``autograd.functional`` then falls back to finite differences)."""


class NoDoubleBackward(Function):
    """Stands for the gradient computation of an op that has no ``backward_graph``: its
    outputs are that op's first-order input gradients; differentiating them raises."""

    def backward(self, *grad_outputs):
        op = self.__dict__.get("op_name", "an op")
        cls = self.__dict__.get("op_class", op)
        raise DoubleBackwardNotImplemented(
            f"shardflow: the second derivative of {op} (create_graph=True) is not implemented "
            f"yet; its first derivative was computed, but differentiating it again needs "
            f"{cls}.backward_graph (fix: express the function with ops that support "
            "higher-order gradients (docs/COMPAT.md, 'Higher-order gradients'), or define "
            f"backward_graph on {cls}: shardflow/autograd/function.py describes it)"
        )

    def name(self) -> str:
        return f"NoDoubleBackward[{self.__dict__.get('op_name', '?')}]"


def has_backward_graph(fn: Function) -> bool:
    return getattr(type(fn), "backward_graph", None) is not None


def run_backward_graph(tensors, grad_tensors, retain_graph: bool, capture=None) -> None:
    """Propagate the seed Tensors ``grad_tensors`` back from ``tensors``, recording the graph
    of the gradients. ``capture`` as in ``engine.run_backward`` (its values become Tensors)."""
    token = enter_quiet()
    try:
        with grad_mode.enable_grad():
            _run(tensors, grad_tensors, retain_graph, capture)
    finally:
        exit_quiet(token)


def _run(tensors, grad_tensors, retain_graph, capture) -> None:
    grads: dict = {}
    roots = []
    for t, g in zip(tensors, grad_tensors):
        fn = t.grad_fn
        if fn is None:
            _deliver_leaf(t, g, capture)
            continue
        slot = grads.get(fn)
        if slot is None:
            slot = grads[fn] = _new_slot(fn)
        slot[t._output_nr] = _add(slot[t._output_nr], g)
        roots.append(fn)
    deps = _collect_dependencies(roots)
    if _rebind_pending():  # ``t.data = x`` after t was saved (rebind.py)
        _rebind_substitute([*roots, *(n for n in deps if isinstance(n, Function))])
    task = enter_task(roots, deps)  # what multi-grad hooks ask (graph_hooks.py)
    try:
        _walk(grads, roots, deps, retain_graph, capture)
    finally:
        exit_task(task)


def _walk(grads, roots, deps, retain_graph, capture) -> None:
    ready = [fn for fn in dict.fromkeys(roots) if deps.get(fn, 0) == 0]
    check_nan = _anomaly_flags[0] and _anomaly_flags[1]
    while ready:
        fn = ready.pop()
        gouts = grads.pop(fn, None)
        if fn._freed:
            _raise_freed(fn)
        in_grads = None
        if gouts is not None and any(g is not None for g in gouts):
            if fn._pre_hooks:
                _run_output_hooks(fn, gouts)
            if capture is not None:
                for i, g in enumerate(gouts):
                    key = (fn, i)
                    if key in capture:
                        capture[key] = _add(capture[key], g)
            if fn._pre_hooks and (UNPACK in fn._pre_hooks or NODE_HOOKS in fn._pre_hooks):
                in_grads = call_backward(fn, _call_backward_graph, gouts, False)
            else:
                in_grads = _call_backward_graph(fn, gouts)
            if check_nan:
                check_gradients_for_nan(fn, [None if g is None else g.array for g in in_grads])
        if not retain_graph:
            fn.release()
        for i, node in enumerate(fn._edges):
            if node is None:
                continue
            if type(node) is tuple:
                node, idx = node
            else:
                idx = 0
            g = None if in_grads is None else in_grads[i]
            if isinstance(node, Function):
                if g is not None:
                    meta = node._out_meta
                    expected = node._out_shape if meta is None else meta[idx][0]
                    if tuple(g.shape) != tuple(expected):
                        g = _fit_gradient(fn, i, g, expected)
                    slot = grads.get(node)
                    if slot is None:
                        slot = grads[node] = _new_slot(node)
                    slot[idx] = _add(slot[idx], g)
                deps[node] -= 1
                if deps[node] == 0:
                    ready.append(node)
            else:
                if g is not None:
                    if tuple(g.shape) != node.array.shape:
                        g = _fit_gradient(fn, i, g, node.array.shape)
                    grads[node] = _add(grads.get(node), g)
                deps[node] -= 1
                if deps[node] == 0 and node in grads:
                    _deliver_leaf(node, grads.pop(node), capture)


def _new_slot(fn: Function) -> list:
    return [None] if fn._out_meta is None else [None] * len(fn._out_meta)


def _call_backward_graph(fn: Function, gouts: list) -> tuple:
    """The input gradients of ``fn`` as Tensors (one per input, or None)."""
    if fn._saved_versions:
        _check_versions(fn)
    if fn._out_meta is not None:  # an output that received nothing gets zeros
        some = next(g for g in gouts if g is not None)
        xp = get_array_module(some.array)
        gouts = [g if g is not None else _wrap(xp.zeros(shape, dtype))
                 for g, (shape, dtype) in zip(gouts, fn._out_meta)]
    if has_backward_graph(fn):
        in_grads = fn.backward_graph(*gouts)
        if not isinstance(in_grads, tuple):
            in_grads = (in_grads,)
        if len(in_grads) != len(fn._edges):
            in_grads = _check_gradient_count(fn, in_grads)
        return tuple(g if g is None or isinstance(g, Tensor) else _wrap(g) for g in in_grads)
    return first_order_only(fn, *gouts)


def first_order_only(fn: Function, *grad_outputs: Tensor) -> tuple:
    """For a ``backward_graph`` that cannot express one case with differentiable ops (e.g.
    prod over a slice holding a zero): ``fn``'s array ``backward`` on ``grad_outputs``, its
    results linked to a NoDoubleBackward node (right first order; a second differentiation
    raises naming the op)."""
    arrays = fn.backward(*[g.array for g in grad_outputs])
    if not isinstance(arrays, tuple):
        arrays = (arrays,)
    if len(arrays) != len(fn._edges):
        arrays = _check_gradient_count(fn, arrays)
    return _link_no_double_backward(fn, list(grad_outputs), arrays)


def _link_no_double_backward(fn: Function, gouts: list, arrays: tuple) -> tuple:
    """``arrays`` (``fn``'s first-order input gradients) as outputs of a NoDoubleBackward
    node whose edges are the output gradients' and ``fn``'s own (see the module docstring)."""
    edges = [edge_of(g) for g in gouts if g.requires_grad]
    edges += [e for e in fn._edges if e is not None]
    if not edges:
        return tuple(None if a is None else _wrap(a) for a in arrays)
    node = NoDoubleBackward()
    node.op_name = fn.name()
    node.op_class = type(fn).__name__
    node._freed = False
    node._pre_hooks = None
    node._saved_versions = None
    node._edges = tuple(edges)
    node.needs_input_grad = (True,) * len(edges)
    node._out_shape = None
    node._out_meta = [((), None) if a is None else (a.shape, a.dtype) for a in arrays]
    return tuple(None if a is None else _wrap(a, True, node, k) for k, a in enumerate(arrays))


def _run_output_hooks(fn: Function, gouts: list) -> None:
    for idx, hooks in fn._pre_hooks.items():
        if type(idx) is not int or gouts[idx] is None:  # (saved-tensor / node hooks' keys)
            continue
        for hook in hooks:
            r = hook(gouts[idx])
            if r is not None:
                gouts[idx] = r


def _deliver_leaf(leaf: Tensor, g: Tensor, capture) -> None:
    """A leaf's whole gradient ``g`` arrived: capture it for ``grad``, or make it (or add it
    to) the leaf's ``.grad``, with the leaf's tensor and post-accumulate-grad hooks."""
    if capture is not None:
        if leaf in capture:  # the leaf's tensor hooks run first, as in torch
            for hook in leaf._hooks or ():
                r = hook(g)
                if r is not None:
                    g = r
            capture[leaf] = _add(capture[leaf], g)
        return
    if leaf._hooks:
        for hook in leaf._hooks:
            r = hook(g)
            if r is not None:
                g = r
        if tuple(g.shape) != leaf.array.shape:
            raise RuntimeError(
                f"a gradient of shape {tuple(g.shape)} reached a leaf of shape "
                f"{tuple(leaf.array.shape)}; a hook registered on the leaf returned a tensor of "
                "the wrong shape: a tensor hook must return a gradient of the tensor's shape (or None)"
            )
    if g.array.dtype != leaf.array.dtype:
        g = g.to(leaf.dtype)
    if leaf.grad is None:
        # a gradient that needs no graph is copied: .grad is changed in place later, and the
        # array may be a seed the caller holds or one handed to two inputs (add)
        leaf.grad = g if g.requires_grad else _wrap(g.array.copy())
        if leaf._spec is not None and leaf.grad._spec is None:  # a global leaf's grad is global
            leaf.grad._spec = leaf._spec.grad_spec()
    else:
        leaf.grad = leaf.grad + g
    if leaf._post_hooks:
        for hook in leaf._post_hooks:
            hook(leaf)


def _fit_gradient(fn: Function, i: int, g: Tensor, expected) -> Tensor:
    """``engine._fit_gradient`` with differentiable ops: sum over the broadcast dims."""
    expected = tuple(expected)
    try:
        compatible = np.broadcast_shapes(expected, tuple(g.shape)) == tuple(g.shape)
    except ValueError:
        compatible = False
    if not compatible:
        raise RuntimeError(
            f"Function {fn.name()} returned an invalid gradient at index {i} - got "
            f"{list(g.shape)} but expected shape compatible with {list(expected)} (the shape "
            f"of input {i}); its backward_graph must return each input's gradient in that "
            "input's shape"
        )
    lead = g.ndim - len(expected)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(expected) if n == 1 and g.shape[lead + k] != 1
    )
    if axes:
        g = g.sum(dim=axes)
    return g.reshape(expected)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b
