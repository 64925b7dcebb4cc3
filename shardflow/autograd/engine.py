"""The backward engine.

Algorithm (PyTorch's, in miniature):

1. From the root nodes, walk ``Function.next`` edges once to count, for every node
   (Function or leaf Tensor), how many edges point at it (its dependencies).
2. Process nodes whose dependencies are all satisfied (Kahn's algorithm, LIFO). For a
   Function: sum the gradients that arrived for each of its outputs, run tensor hooks on
   them, call ``backward``, and send each input gradient along its edge.
3. A leaf whose dependencies are satisfied has received its whole gradient: run its
   tensor hooks, accumulate into ``.grad``, then run its post-accumulate-grad hooks. Data
   parallel starts its bucket all_reduce from that last hook, while the rest of backward
   is still running.
4. Unless ``retain_graph``, each Function is released right after its backward.

``grad`` (``autograd.grad``) runs the same walk but captures the gradients reaching the
requested tensors instead of accumulating into ``.grad``.
"""

from __future__ import annotations

import sys

import numpy as np

from .function import Function


def _collect_dependencies(roots) -> dict:
    deps: dict = {}
    stack = [r for r in roots if isinstance(r, Function)]
    seen = set(stack)
    while stack:
        fn = stack.pop()
        if fn._freed:
            _raise_freed(fn)
        for edge in fn.next:
            if edge is None:
                continue
            node = edge[0]
            deps[node] = deps.get(node, 0) + 1
            if node not in seen:
                seen.add(node)
                if isinstance(node, Function):
                    stack.append(node)
    return deps


def _raise_freed(fn) -> None:
    raise RuntimeError(
        f"Trying to backward through the graph a second time (at {fn.name()}): its saved "
        "values were freed after the first backward. Pass retain_graph=True to the first "
        "backward() if you need to run backward twice."
    )


def _check_versions(fn: Function) -> None:
    for counter, version, shape in fn._saved_versions:
        if counter[0] != version:
            raise RuntimeError(
                f"one of the tensors needed for gradient computation has been modified by an "
                f"inplace operation: a tensor of shape {tuple(shape)} saved by {fn.name()} is "
                f"at version {counter[0]}; expected version {version}. Use an out-of-place "
                "op (e.g. x = x * 2 instead of x *= 2) or .clone() the tensor before changing it."
            )


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _owned(g):
    """A gradient array the leaf may keep and later modify in place (steal or copy)."""
    # references: the caller's local, this argument, getrefcount's own -> 3 means unshared
    if g.base is None and sys.getrefcount(g) <= 3 and g.flags.writeable:
        return g
    return g.copy()


def _accumulate_leaf(leaf, g) -> None:
    from .tensor import _wrap

    if leaf._hooks:
        for hook in leaf._hooks:
            r = hook(_wrap(g))
            if r is not None:
                g = r.array
    if g.shape != leaf.array.shape:
        raise RuntimeError(
            f"internal error: gradient of shape {g.shape} reached a leaf of shape "
            f"{leaf.array.shape}; please report this with the op that produced it"
        )
    if g.dtype != leaf.array.dtype:
        g = g.astype(leaf.array.dtype)
    if leaf.grad is None:
        leaf.grad = _wrap(_owned(g) if isinstance(g, np.ndarray) else g.copy())
    else:
        leaf.grad.array += g
    if leaf._post_hooks:
        for hook in leaf._post_hooks:
            hook(leaf)


def run_backward(tensors, grad_tensors, retain_graph: bool, capture=None):
    """Propagate ``grad_tensors`` back from ``tensors``.

    ``capture``: optional dict ``{node_key: None}`` where node_key is ``(fn, output_nr)`` or a
    leaf Tensor. When given, gradients reaching those keys are stored there and leaves'
    ``.grad`` is left untouched (``autograd.grad``).
    """
    grads: dict = {}
    roots = []
    for t, g in zip(tensors, grad_tensors):
        if t.grad_fn is None:  # backward on a leaf: its gradient is the seed itself
            if capture is None:
                _accumulate_leaf(t, g)
            elif t in capture:
                capture[t] = _add(capture[t], g)
            continue
        fn = t.grad_fn
        slot = grads.get(fn)
        if slot is None:
            n = 1 if fn._out_meta is None else len(fn._out_meta)
            slot = grads[fn] = [None] * n
        slot[t._output_nr] = _add(slot[t._output_nr], g)
        roots.append(fn)

    deps = _collect_dependencies(roots)
    ready = [fn for fn in dict.fromkeys(roots) if deps.get(fn, 0) == 0]
    while ready:
        fn = ready.pop()
        gouts = grads.pop(fn, None)
        if fn._freed:
            _raise_freed(fn)
        if gouts is not None and fn._pre_hooks:
            from .tensor import _wrap

            for idx, hooks in fn._pre_hooks.items():
                if gouts[idx] is None:
                    continue
                for hook in hooks:
                    r = hook(_wrap(gouts[idx]))
                    if r is not None:
                        gouts[idx] = r.array
        if capture is not None and gouts is not None:
            for i, g in enumerate(gouts):
                key = (fn, i)
                if key in capture:
                    capture[key] = _add(capture[key], g)
        if gouts is None or all(g is None for g in gouts):
            in_grads = (None,) * len(fn.next)
        else:
            if fn._saved_versions:
                _check_versions(fn)
            if fn._out_meta is None:
                in_grads = fn.backward(gouts[0])
            else:
                gouts = [
                    g if g is not None else np.zeros(shape, dtype)
                    for g, (shape, dtype) in zip(gouts, fn._out_meta)
                ]
                in_grads = fn.backward(*gouts)
            if not isinstance(in_grads, tuple):
                in_grads = (in_grads,)
        if not retain_graph:
            fn.release()
        for edge, g in zip(fn.next, in_grads):
            if edge is None:
                continue
            node, idx = edge
            if g is not None:
                if isinstance(node, Function):
                    slot = grads.get(node)
                    if slot is None:
                        n = 1 if node._out_meta is None else len(node._out_meta)
                        slot = grads[node] = [None] * n
                    slot[idx] = g if slot[idx] is None else slot[idx] + g
                else:
                    prev = grads.get(node)
                    grads[node] = g if prev is None else prev + g
            left = deps[node] - 1
            deps[node] = left
            if left == 0:
                if isinstance(node, Function):
                    ready.append(node)
                else:
                    g_leaf = grads.pop(node, None)
                    if g_leaf is None:
                        continue
                    if capture is None:
                        _accumulate_leaf(node, g_leaf)
                    elif node in capture:
                        capture[node] = _add(capture[node], g_leaf)
