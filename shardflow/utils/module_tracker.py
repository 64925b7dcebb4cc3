"""``torch.utils.module_tracker.ModuleTracker``: inside ``with ModuleTracker() as tracker:``,
``tracker.parents`` is the set of the modules running now, forward or backward, by torch's
names (``"Global"`` always; the outermost module by its class name, its children by attribute
path: ``"Net"``, ``"Net.seq"``, ``"Net.seq.0"``), and ``tracker.is_bw`` says whether a backward
pass is running. Memory and FLOP tools read it to attribute what they measure to modules.

How, as torch's: a module's name is added when its forward starts and removed when it ends;
in backward a gradient hook on its outputs adds it back when their gradients arrive, and one
on its inputs removes it when theirs are computed (``register_multi_grad_hook``). torch sees
forward calls through global module hooks; shardflow through ``Module.__call__``'s call
interceptor, the slot ``shardflow.fx``'s tracer uses (a tracker passes calls on to a tracer
installed before it). torch clears what a backward left in ``parents`` with an engine
callback at the end of the pass; here the names a backward added are dropped when
``parents`` is read outside a backward pass (the same answer, read at any point after).
"""

from __future__ import annotations

import logging
import weakref

from ..autograd.graph_hooks import current_task, register_multi_grad_hook
from ..autograd.tensor import Tensor
from ..nn import module as _module
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


class ModuleTracker:
    """Track which modules are running (``parents``) and whether in backward (``is_bw``)."""

    def __init__(self) -> None:
        self._parents = {"Global"}
        self._from_backward: set[str] = set()  # names a backward pass added (cleared after it)
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._hooks: list = []
        self._previous = None
        self._entered = False

    @property
    def parents(self) -> set[str]:
        """The fully qualified names of the modules running now, and ``"Global"``."""
        if self._from_backward and current_task() is None:  # the backward pass has ended
            self._parents -= self._from_backward
            self._from_backward.clear()
        return self._parents

    @parents.setter
    def parents(self, value) -> None:
        self._parents = set(value)

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running."""
        return current_task() is not None

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:  # children are named at their parent's first call
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _enter(self, name: str, is_bw: bool) -> None:
        parents = self.parents
        if name in parents:
            logger.info("The module hierarchy tracking seems to be broken as this Module was already entered. "
                        "%s during %s", name, "backward" if is_bw else "forward")
        parents.add(name)
        if is_bw:
            self._from_backward.add(name)

    def _leave(self, name: str, is_bw: bool) -> None:
        parents = self.parents
        if name in parents:
            parents.remove(name)
            self._from_backward.discard(name)
        else:
            logger.info("The Module hierarchy tracking is confused as we're exiting a Module that was never "
                        "entered. %s during %s", name, "backward" if is_bw else "forward")

    def _grad_hook(self, values, fn) -> None:
        tensors = [a for a in tree_flatten(values)[0] if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, fn))

    def _intercept(self, mod, call, args, kwargs):
        name = self._get_mod_name(mod)
        self._enter(name, False)
        self._grad_hook(args, lambda grads: self._leave(name, True))
        try:
            if self._previous is not None:
                out = self._previous(mod, call, args, kwargs)
            else:
                out = call(*args, **kwargs)
        finally:
            self._leave(name, False)
        self._grad_hook(out, lambda grads: self._enter(name, True))
        return out

    def __enter__(self):
        self._previous = _module.set_call_interceptor(self._intercept)
        self._entered = True
        return self

    def __exit__(self, *args):
        if self._entered:
            _module.set_call_interceptor(self._previous)
            self._previous = None
            self._entered = False
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
