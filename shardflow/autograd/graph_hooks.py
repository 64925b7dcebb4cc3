"""Hooks on the backward pass as a whole: ``register_multi_grad_hook``, node hooks
(``grad_fn.register_hook`` / ``register_prehook``) and the current backward pass they read.

The current pass: ``engine.run_backward`` and the ``create_graph`` pass
(``higher_order.py``) enter a :class:`BackwardTask` (thread-local, nested for a backward run
inside a hook or a checkpoint's recomputation) holding the roots and the dependency count of
every node and leaf the pass will reach. A multi-grad hook asks it which of its tensors will
get a gradient in this pass:

* a leaf will when the pass reaches it (it has incoming edges); an intermediate when its
  producer is reached or is a root;
* ``mode="all"``: each tensor gets an ordinary tensor hook; the first one to fire in a pass
  works out which of the tensors the pass will reach, and once all of those have fired
  ``fn`` gets one gradient per tensor (None for the ones this pass does not reach); once per
  pass, as in torch;
* ``mode="any"``: ``fn(grad)`` with the first gradient of the pass, once per pass.

The per-pass state lives on the task, so nothing outlives the pass.

Node hooks: a node with hooks gets :data:`NODE_HOOKS` in its ``_pre_hooks`` (the key that
sends a node to the engines' slow path, as saved-tensor hooks do); :func:`call_backward`
there runs the pre-hooks on the output gradients, the node's backward (unpacking saved
tensors first when they were packed), then the post-hooks on the input gradients.
"""

from __future__ import annotations

import threading

from .saved_hooks import UNPACK, call_unpacked
from .tensor import Tensor, _wrap

NODE_HOOKS = "node hooks"  # the key in Function._pre_hooks (see the module docstring)

_local = threading.local()


class BackwardTask:
    """One backward pass: its root Functions and ``deps`` (node or leaf -> incoming edges)."""

    __slots__ = ("roots", "deps", "multi", "previous")

    def __init__(self, roots, deps):
        self.roots = roots
        self.deps = deps
        self.multi = {}  # per multi-grad hook: its state in this pass
        self.previous = None

    def reaches(self, t: Tensor) -> bool:
        """Whether this pass computes a gradient for ``t``."""
        fn = t.grad_fn
        if fn is None:
            return t in self.deps
        return fn in self.deps or any(r is fn for r in self.roots)


def enter_task(roots, deps) -> BackwardTask:
    task = BackwardTask(roots, deps)
    task.previous = getattr(_local, "task", None)
    _local.task = task
    return task


def exit_task(task: BackwardTask) -> None:
    _local.task = task.previous


def current_task():
    return getattr(_local, "task", None)


class _MultiHandle:
    """The handle ``register_multi_grad_hook`` returns: ``remove()`` removes every tensor hook."""

    def __init__(self, handles):
        self._handles = handles

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """torch.autograd.graph.register_multi_grad_hook (module docstring)."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise AssertionError(
                "Expected gradient function to be set (register_multi_grad_hook: every tensor "
                "must require grad; fix: leave out tensors that need no gradient)"
            )
    key = object()  # this hook's state in each pass: task.multi[key]

    def state():
        task = current_task()
        if task is None:  # a hook fired outside a pass (cannot happen in the engines)
            task = BackwardTask((), {})
        s = task.multi.get(key)
        if s is None:
            if mode == "any":
                s = task.multi[key] = [False]
            else:
                expected = [i for i, t in enumerate(tensors) if task.reaches(t)]
                s = task.multi[key] = [set(expected), [None] * len(tensors)]
        return s

    def make(i):
        if mode == "any":
            def hook(grad):
                s = state()
                if not s[0]:
                    s[0] = True
                    fn(grad)
        else:
            def hook(grad):
                waiting, grads = state()
                grads[i] = grad
                waiting.discard(i)
                if not waiting:
                    waiting.add(-1)  # called: later hooks of this pass do nothing
                    fn(tuple(grads))
        return hook

    return _MultiHandle([t.register_hook(make(i)) for i, t in enumerate(tensors)])


# ----------------------------------------------------------------------------- node hooks


def register_node_hook(fn, hook, pre: bool):
    """Add ``hook`` to node ``fn``'s pre-hooks (``hook(grad_outputs)``) or hooks
    (``hook(grad_inputs, grad_outputs)``); returns a handle whose ``remove()`` drops it."""
    from .tensor import _RemovableHandle

    if fn._pre_hooks is None:
        fn._pre_hooks = {}
    lists = fn._pre_hooks.get(NODE_HOOKS)
    if lists is None:
        lists = fn._pre_hooks[NODE_HOOKS] = ([], [])
    hooks = lists[0] if pre else lists[1]
    hooks.append(hook)
    return _RemovableHandle(hooks, hook)


def _as_tensor(g):
    return None if g is None or isinstance(g, Tensor) else _wrap(g)


def _as_array(g, arrays: bool):
    if g is None:
        return None
    if arrays:
        return g.array if isinstance(g, Tensor) else g
    return g if isinstance(g, Tensor) else _wrap(g)


def call_backward(fn, backward, gouts: list, arrays: bool):
    """``backward(fn, gouts)`` for a node with saved-tensor or node hooks (module
    docstring); ``arrays``: the first-order engine's gradients are arrays (hooks see Tensors)."""
    hooks = fn._pre_hooks
    lists = hooks.get(NODE_HOOKS)
    if lists is not None and lists[0]:
        for hook in list(lists[0]):
            r = hook(tuple(_as_tensor(g) for g in gouts))
            if r is not None:
                gouts = [_as_array(g, arrays) for g in r]
    if UNPACK in hooks:
        in_grads = call_unpacked(fn, backward, fn, gouts)
    else:
        in_grads = backward(fn, gouts)
    if lists is not None and lists[1] and in_grads is not None:
        for hook in list(lists[1]):
            r = hook(tuple(_as_tensor(g) for g in in_grads), tuple(_as_tensor(g) for g in gouts))
            if r is not None:
                in_grads = tuple(_as_array(g, arrays) for g in r)
    return in_grads
