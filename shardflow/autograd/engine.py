"""The backward engine.

Algorithm (PyTorch's, in miniature), one named step each:

1. ``_seed_roots``: put the seed gradient of every output in the slot of the Function that
   made it (a seed given for a leaf goes to that leaf directly).
2. ``_collect_dependencies``: walk the ``Function`` edges (``_edges``, packed) once to count, for every node
   (Function or leaf Tensor), how many edges point at it.
3. Process nodes whose dependencies are all satisfied (Kahn's algorithm, LIFO). For a
   Function (``_backward_node``): take the gradients that arrived for its outputs, run the
   tensor hooks registered on them (``_run_output_hooks``), hand them to ``autograd.grad``
   if it asked for them (``_capture_outputs``), check that no saved tensor was modified in
   place, and call ``backward`` (``_call_backward``), which must return one gradient (or
   None) per input.
4. Unless ``retain_graph``, each Function is released right after its backward.
5. ``_send_gradients``: add each input gradient into the slot of the node it belongs to,
   after checking its shape against that node's (``_fit_gradient``), and count the edge
   as satisfied. A Function with no edges left is ready; a leaf with no edges left has its
   whole gradient and gets it (``_deliver_leaf``, once the node's edges are all sent):
   tensor hooks, accumulation into ``.grad``, then post-accumulate-grad hooks. Data
   parallel starts its bucket all_reduce from that last hook, while the rest of backward
   is still running.

A leaf's first gradient is *adopted* as ``.grad`` (no copy) when no one else references
the array, as PyTorch's AccumulateGrad steals it; otherwise it is copied, because ``.grad``
is changed in place later (optimizers, in-place reduces) and must alias nothing. Before a
leaf is delivered the engine drops its own references (the backward's result tuple, the
output gradients, loop locals) and moves the array into a one-element list; its reference
count, compared with one measured at import, then tells whether anything else holds it (a
second input handed the same array, a hook that kept it, a saved tensor, a view).
Views, non-contiguous, read-only and CuPy arrays are always copied (``_adopt_or_copy``).

``grad`` (``autograd.grad``) runs the same walk with ``capture``: gradients reaching the
requested tensors are stored there instead of being accumulated into ``.grad``.

The loop in ``run_backward`` and ``_send_gradients`` is the per-op hot path: the rare steps
(hooks, capture, gradient fix-ups, errors) are called only when they have work to do.
"""

from __future__ import annotations

import sys

import numpy as np

from ..backend import get_array_module
from ..backend.fp_errors import enter_quiet, exit_quiet
from .anomaly_mode import _flags as _anomaly_flags
from .anomaly_mode import check_gradients_for_nan
from .function import Function
from .graph_hooks import NODE_HOOKS, call_backward, enter_task, exit_task
from .rebind import pending as _rebind_pending
from .rebind import substitute as _rebind_substitute
from .saved_hooks import UNPACK
from .sparse_grad import SparseGrad, accumulate_sparse


def run_backward(tensors, grad_tensors, retain_graph: bool, capture=None):
    """Propagate ``grad_tensors`` back from ``tensors``.

    ``capture``: optional dict ``{node_key: None}`` where node_key is ``(fn, output_nr)`` or a
    leaf Tensor. When given, gradients reaching those keys are stored there and leaves'
    ``.grad`` is left untouched (``autograd.grad``).
    """
    token = enter_quiet()  # NumPy's FP warnings off for the whole pass (backend/fp_errors.py)
    task = None
    try:
        grads, roots = _seed_roots(tensors, grad_tensors, capture)
        deps = _collect_dependencies(roots)
        if _rebind_pending():  # ``t.data = x`` after t was saved (rebind.py)
            _rebind_substitute([*(r for r in roots if isinstance(r, Function)), *(n for n in deps if isinstance(n, Function))])
        task = enter_task(roots, deps)  # what multi-grad hooks ask (graph_hooks.py)
        ready = [fn for fn in dict.fromkeys(roots) if deps.get(fn, 0) == 0]
        check_nan = _anomaly_flags[0] and _anomaly_flags[1]  # anomaly mode (anomaly_mode.py)
        done: list = []  # leaves whose whole gradient arrived at the current node
        # The loop inlines the common case of steps 3-5 (a one-output node, no hooks, no
        # capture; gradients of the expected shapes): each helper call would cost about as much
        # as a small op's arithmetic. Everything else goes to the named helpers.
        while ready:
            fn = ready.pop()
            gouts = grads.pop(fn, None)
            if fn._freed:
                _raise_freed(fn)
            if gouts is None:
                in_grads = None
            elif fn._pre_hooks or capture is not None or fn._out_meta is not None:
                in_grads = _backward_node(fn, gouts, capture)
            else:
                g = gouts[0]
                if g is None:
                    in_grads = None
                else:
                    saved = fn._saved_versions
                    if saved is not None:
                        for k in range(0, len(saved), 3):
                            if saved[k][0] != saved[k + 1]:
                                _check_versions(fn)  # raises, naming the tensor
                    in_grads = fn.backward(g)
                    if type(in_grads) is not tuple:
                        in_grads = (in_grads,)
                    if len(in_grads) != len(fn._edges):
                        in_grads = _check_gradient_count(fn, in_grads)
            if check_nan and in_grads is not None:
                check_gradients_for_nan(fn, in_grads)
            if not retain_graph:
                fn.__dict__.clear()  # Function.release(), inlined
                fn._freed = True
            if in_grads is None or capture is not None:
                _send_gradients(fn, in_grads, grads, deps, ready, done)
                if done:
                    in_grads = gouts = g = None
                    _deliver_leaves(done, grads, capture)
                continue
            for i, node in enumerate(fn._edges):  # _send_gradients, inlined
                if node is None:
                    continue
                if type(node) is tuple:  # packed edges (function.py): a pair for output >= 1
                    node, idx = node
                else:
                    idx = 0
                g = in_grads[i]
                if isinstance(node, Function):
                    if g is not None:
                        meta = node._out_meta
                        expected = node._out_shape if meta is None else meta[idx][0]
                        if g.shape != expected:
                            g = _fit_gradient(fn, i, g, expected)
                        slot = grads.get(node)
                        if slot is None:
                            if meta is None:
                                grads[node] = [g]
                            else:
                                slot = grads[node] = [None] * len(meta)
                                slot[idx] = g
                        else:
                            prev = slot[idx]
                            slot[idx] = g if prev is None else prev + g
                    left = deps[node] - 1
                    deps[node] = left
                    if left == 0:
                        ready.append(node)
                else:
                    if g is not None:
                        if g.shape != node.array.shape:
                            g = _fit_gradient(fn, i, g, node.array.shape)
                        prev = grads.get(node)
                        grads[node] = g if prev is None else prev + g
                    left = deps[node] - 1
                    deps[node] = left
                    if left == 0:
                        done.append(node)
            if done:
                # the engine's own references to the gradients go first: what is left is
                # what tells _adopt_or_copy whether anyone else holds a leaf's gradient
                in_grads = gouts = g = prev = slot = None
                _deliver_leaves(done, grads, None)
    finally:
        if task is not None:
            exit_task(task)
        exit_quiet(token)


def _seed_roots(tensors, grad_tensors, capture):
    """Gradient slots holding the seeds, and the Functions that made the outputs."""
    grads: dict = {}
    roots = []
    for t, g in zip(tensors, grad_tensors):
        fn = t.grad_fn
        if fn is None:  # backward on a leaf: its gradient is the seed itself (which the
            _deliver_leaf(t, [g], capture)  # caller holds: copied into .grad)
            continue
        slot = grads.get(fn)
        if slot is None:
            slot = grads[fn] = _new_slot(fn)
        slot[t._output_nr] = _add(slot[t._output_nr], g)
        roots.append(fn)
    return grads, roots


def _new_slot(fn: Function) -> list:
    """One gradient place per output of ``fn``."""
    return [None] if fn._out_meta is None else [None] * len(fn._out_meta)


def _collect_dependencies(roots) -> dict:
    deps: dict = {}
    # One entry per root Function: two outputs of one multi-output Function (``split``)
    # given as roots must not count that Function's edges twice.
    stack = list(dict.fromkeys(r for r in roots if isinstance(r, Function)))
    seen = set(stack)
    while stack:
        fn = stack.pop()
        if fn._freed:
            _raise_freed(fn)
        for node in fn._edges:  # packed edges (function.py)
            if node is None:
                continue
            if type(node) is tuple:
                node = node[0]
            deps[node] = deps.get(node, 0) + 1
            if node not in seen:
                seen.add(node)
                if isinstance(node, Function):
                    stack.append(node)
    return deps


def _backward_node(fn: Function, gouts, capture):
    """Gradients for ``fn``'s inputs from those of its outputs (None: nothing arrived)."""
    if fn._freed:
        _raise_freed(fn)
    if gouts is None:
        return None
    hooks = fn._pre_hooks
    if hooks:
        _run_output_hooks(fn, gouts)
    if capture is not None:
        _capture_outputs(fn, gouts, capture)
    if hooks and (UNPACK in hooks or NODE_HOOKS in hooks):  # saved-tensor or node hooks
        return call_backward(fn, _call_backward, gouts, True)
    return _call_backward(fn, gouts)


def _run_output_hooks(fn: Function, gouts: list) -> None:
    """Tensor hooks registered on ``fn``'s outputs may replace their gradients."""
    from .tensor import _wrap

    for idx, hooks in fn._pre_hooks.items():
        if type(idx) is not int or gouts[idx] is None:  # (saved-tensor / node hooks' keys)
            continue
        for hook in hooks:
            r = hook(_wrap(gouts[idx]))
            if r is not None:
                gouts[idx] = r.array


def _capture_outputs(fn: Function, gouts: list, capture: dict) -> None:
    for i, g in enumerate(gouts):
        key = (fn, i)
        if key in capture:
            capture[key] = _add(capture[key], g)


def _call_backward(fn: Function, gouts: list):
    """``fn.backward`` on the output gradients, as a tuple of one entry per input."""
    if fn._out_meta is None:
        if gouts[0] is None:
            return None
        if fn._saved_versions:
            _check_versions(fn)
        in_grads = fn.backward(gouts[0])
    else:
        if all(g is None for g in gouts):
            return None
        if fn._saved_versions:
            _check_versions(fn)
        # an output that received no gradient gets zeros (on the others' device), so
        # backward sees every output
        xp = get_array_module(next(g for g in gouts if g is not None))
        in_grads = fn.backward(*[
            g if g is not None else xp.zeros(shape, dtype)
            for g, (shape, dtype) in zip(gouts, fn._out_meta)
        ])
    if not isinstance(in_grads, tuple):
        in_grads = (in_grads,)
    if len(in_grads) != len(fn._edges):
        in_grads = _check_gradient_count(fn, in_grads)
    return in_grads


def _send_gradients(fn: Function, in_grads, grads: dict, deps: dict, ready: list, done: list) -> None:
    """Route each input gradient of ``fn`` to its node; a Function that has them all goes to
    ``ready``, a leaf that has them all to ``done`` (the caller delivers it once this call's
    references to the gradients are gone: see ``_adopt_or_copy``)."""
    for i, node in enumerate(fn._edges):  # packed edges (function.py)
        if node is None:
            continue
        if type(node) is tuple:
            node, idx = node
        else:
            idx = 0
        g = None if in_grads is None else in_grads[i]
        if isinstance(node, Function):
            if g is not None:
                expected = node._out_shape if node._out_meta is None else node._out_meta[idx][0]
                if g.shape != expected:
                    g = _fit_gradient(fn, i, g, expected)
                slot = grads.get(node)
                if slot is None:
                    slot = grads[node] = _new_slot(node)
                slot[idx] = g if slot[idx] is None else slot[idx] + g
            left = deps[node] - 1
            deps[node] = left
            if left == 0:
                ready.append(node)
        else:
            if g is not None:
                if g.shape != node.array.shape:
                    g = _fit_gradient(fn, i, g, node.array.shape)
                prev = grads.get(node)
                grads[node] = g if prev is None else prev + g
            left = deps[node] - 1
            deps[node] = left
            if left == 0:
                done.append(node)


def _deliver_leaves(done: list, grads: dict, capture) -> None:
    """Deliver (``_deliver_leaf``) the leaves in ``done``, in order, and empty it. Each
    gradient moves from ``grads`` into a one-element list with no other reference left
    here, which ``_adopt_or_copy`` relies on."""
    for leaf in done:
        if leaf in grads:
            _deliver_leaf(leaf, [grads.pop(leaf)], capture)
    done.clear()


def _deliver_leaf(leaf, box: list, capture) -> None:
    """A leaf's whole gradient (``box[0]``) has arrived: accumulate it, or capture it for
    ``grad``."""
    if capture is None:
        _accumulate_leaf(leaf, box)
    elif leaf in capture:  # the leaf's tensor hooks run first, as in torch
        g = run_tensor_hooks(leaf, box[0]) if leaf._hooks else box[0]
        capture[leaf] = _add(capture[leaf], g)


def run_tensor_hooks(leaf, g):
    """The leaf's tensor hooks (``register_hook``) on its whole gradient ``g``, in order; a
    hook's non-None result replaces it. Returns the array (checked against the leaf's shape).
    Also run by compiled steps (``jit/step_plan.py``) where they set ``.grad``."""
    from .tensor import _wrap

    if leaf._hooks:
        for hook in leaf._hooks:
            r = hook(g.tensor() if type(g) is SparseGrad else _wrap(g))
            if r is not None:
                g = SparseGrad.of_tensor(r) if r.is_sparse else r.array
    if g.shape != leaf.array.shape:
        raise RuntimeError(
            f"a gradient of shape {tuple(g.shape)} reached a leaf of shape "
            f"{tuple(leaf.array.shape)}; a hook registered on the leaf returned a tensor of "
            "the wrong shape: a tensor hook must return a gradient of the tensor's shape (or None)"
        )
    return g


def _accumulate_leaf(leaf, box: list) -> None:
    """Add the leaf's whole gradient ``box[0]`` into ``.grad`` (tensor hooks first,
    post-accumulate-grad hooks after). ``box`` is a one-element list holding the only
    reference the engine keeps to the array (``_adopt_or_copy``); the gradient is only ever
    read through it here, never kept in a local, so that stays true."""
    from .tensor import _wrap

    if leaf._hooks:
        box[0] = run_tensor_hooks(leaf, box[0])
    elif box[0].shape != leaf.array.shape:
        run_tensor_hooks(leaf, box[0])  # raises, naming the shapes
    if type(box[0]) is SparseGrad:  # Embedding(sparse=True)'s weight (sparse_grad.py)
        if box[0].dtype != leaf.array.dtype:
            box[0] = box[0].astype(leaf.array.dtype)
        accumulate_sparse(leaf, box[0])
        for hook in leaf._post_hooks or ():
            hook(leaf)
        return
    want = getattr(leaf, "_sf_grad_dtype", False)  # Tensor.grad_dtype, when set (tensor.py)
    if want is False:
        want = leaf.array.dtype
    else:  # None keeps the dtype that arrives
        want = box[0].dtype if want is None else want.np
    if box[0].dtype != want:
        box[0] = box[0].astype(want)  # a new array, owned by the box alone
    grad = leaf.grad
    if grad is None:
        leaf.grad = grad = _wrap(_adopt_or_copy(box))
        if leaf._spec is not None:  # a global leaf: its .grad is global, in the grad layout
            grad._spec = leaf._spec.grad_spec()
    else:
        grad.array += box[0]
    if leaf._post_hooks:
        for hook in leaf._post_hooks:
            hook(leaf)


def _refs_in_box(box: list) -> int:
    """``sys.getrefcount`` of ``box[0]``, always counted from this one call site."""
    return sys.getrefcount(box[0])


# What _refs_in_box reads for an array held by nothing but its box: the list's reference
# plus the call's own, however this interpreter counts the latter (measured, not assumed).
_SOLE_REFS = _refs_in_box([np.empty(0)])


def _adopt_or_copy(box: list):
    """The array ``.grad`` may take: ``box[0]`` itself when nobody else can see it, else a
    copy (PyTorch's AccumulateGrad "steals" the incoming gradient under the same rule).

    ``.grad`` is changed in place afterwards (optimizers, ``grad *= x``, ``clip_grad_norm_``,
    DDP's and FSDP's in-place reduces, the next backward's accumulation), so it must share
    memory with no other live array. The incoming array is adopted when all of these hold:

    * nothing but the box references it. Every other holder keeps a counted reference: a
      second input of the same backward that was handed the same array (``add`` returns
      ``g`` twice: the other slot in ``grads`` or the next Function's slot still holds it),
      a saved tensor or an input whose array it is (the Tensor, or the Function's state
      under ``retain_graph``), a hook that kept the Tensor it was given (or its array), a
      view of it (a view references its base), a buffer exported to MPI or DLPack. The
      engine drops its own references (the backward's result tuple, the output gradients,
      loop locals) before it delivers, so the count is exact. A Python program cannot hold
      the array without a counted reference, which is why a reference count is sound here
      (NumPy's temporary elision relies on the same fact); the expected count is measured
      at import (``_SOLE_REFS``), not hard-coded for one interpreter version;
    * it owns its memory (``base is None``): a view of something else (``broadcast_to`` of
      the output gradient, a slice of a saved array, the mmap FSDP gathers into) shares
      that memory however few references the view has;
    * it is a NumPy array, C-contiguous and writeable (the dtype and shape are the
      parameter's already). CuPy arrays are always copied: two CuPy arrays can share one
      allocation without either being the other's ``base``.

    A copy is what was made before in every case, so the rule only removes copies."""
    if (_refs_in_box(box) == _SOLE_REFS and type(box[0]) is np.ndarray
            and box[0].base is None and box[0].flags.c_contiguous and box[0].flags.writeable):
        return box[0]
    return box[0].copy()


# ----------------------------------------------------------------------------- checks


def _check_gradient_count(fn: Function, in_grads: tuple) -> tuple:
    """One gradient per input (PyTorch's rule), with two allowances that lose nothing:
    extra trailing entries that are None, and missing trailing entries for inputs that need
    no gradient (non-Tensor arguments, integer targets). A missing gradient for an input
    that needs one is the silent-loss case: it raises."""
    n = len(fn._edges)
    got = len(in_grads)
    if got > n and all(g is None for g in in_grads[n:]):
        return in_grads[:n]
    if got < n and all(edge is None for edge in fn._edges[got:]):
        return in_grads + (None,) * (n - got)
    raise RuntimeError(
        f"function {fn.name()} returned an incorrect number of gradients (expected {n}, got "
        f"{len(in_grads)}): its backward must return one gradient (or None) for each of the "
        f"{n} positional inputs of {type(fn).__name__}.apply(), in order"
    )


def _fit_gradient(fn: Function, i: int, g, expected):
    """A gradient whose shape differs from its input's: sum it over broadcast dims when the
    input's shape broadcasts to it (as PyTorch does), else raise naming the Function."""
    try:
        compatible = np.broadcast_shapes(tuple(expected), tuple(g.shape)) == tuple(g.shape)
    except ValueError:
        compatible = False
    if not compatible:
        raise RuntimeError(
            f"Function {fn.name()} returned an invalid gradient at index {i} - got "
            f"{list(g.shape)} but expected shape compatible with {list(expected)} (the shape "
            f"of input {i}); its backward must return each input's gradient in that input's shape"
        )
    lead = g.ndim - len(expected)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(expected) if n == 1 and g.shape[lead + k] != 1
    )
    return g.sum(axis=axes).reshape(expected) if axes else g.reshape(expected)


def _raise_freed(fn) -> None:
    raise RuntimeError(
        f"Trying to backward through the graph a second time (at {fn.name()}): its saved "
        "values were freed after the first backward. Pass retain_graph=True to the first "
        "backward() if you need to run backward twice."
    )


def _check_versions(fn: Function) -> None:
    saved = fn._saved_versions
    for k in range(0, len(saved), 3):
        counter, version, index = saved[k:k + 3]
        if counter[0] != version:
            raise RuntimeError(
                f"one of the tensors needed for gradient computation has been modified by an "
                f"inplace operation: {_saved_tensor_name(fn, index)} saved by {fn.name()} is "
                f"at version {counter[0]}; expected version {version}. Use an out-of-place "
                "op (e.g. x = x * 2 instead of x *= 2) or .clone() the tensor before changing it."
            )


def _saved_tensor_name(fn: Function, index: int) -> str:
    """'output 0' / 'input 1' of ``fn``, with its shape where the graph records it (the
    producer's output shape, or the leaf's; an input that needs no gradient has no edge)."""
    if index < 0:
        k = -1 - index
        shape = fn._out_shape if fn._out_meta is None else fn._out_meta[k][0]
        return f"a tensor of shape {tuple(shape)} (output {k})"
    edge = fn.next[index] if index < len(fn.next) else None
    if edge is None:
        return f"input {index}"
    node, k = edge
    if isinstance(node, Function):
        shape = node._out_shape if node._out_meta is None else node._out_meta[k][0]
    else:
        shape = node.array.shape
    return f"a tensor of shape {tuple(shape)} (input {index})"


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b
