"""Optimizer hooks with PyTorch's names, signatures and order.

* step hooks: ``hook(optimizer, args, kwargs)`` where ``args`` includes the optimizer
  itself (torch passes the bound call's positional arguments); a pre-hook may return a new
  ``(args, kwargs)``. Order: global pre-hooks, the optimizer's pre-hooks, ``step``, the
  optimizer's post-hooks, global post-hooks (torch's ``profile_hook_step``).
* state_dict hooks: pre ``hook(optimizer)``, post ``hook(optimizer, state_dict)`` (may
  return a replacement); load_state_dict hooks: pre ``hook(optimizer, state_dict)`` (may
  return a replacement), post ``hook(optimizer)``.

Every ``Optimizer`` subclass's ``step`` is wrapped once, when the class is made
(:func:`hooked_step` from ``Optimizer.__init_subclass__``): with no hook registered the
wrapper is one truth test and a call. A subclass's ``step`` calling ``super().step()`` runs
the hooks once (the outermost call owns them).
"""

from __future__ import annotations

import functools
from collections import OrderedDict

from ..autograd.sparse_grad import made as _sparse_made
from ..nn.module import RemovableHandle

_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; returning
    ``(new_args, new_kwargs)`` replaces the call's arguments."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _register(owner, attr: str, hook, prepend: bool = False) -> RemovableHandle:
    """Add ``hook`` to ``owner``'s hook dict ``attr`` (made on first use, so optimizers
    unpickled from before hooks existed still work)."""
    hooks = owner.__dict__.get(attr)
    if hooks is None:
        hooks = owner.__dict__[attr] = OrderedDict()
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _hooks(optimizer, attr: str):
    return list(optimizer.__dict__.get(attr, {}).values())


def refuse_sparse_grads(optimizer) -> None:
    """PyTorch's error for an optimizer without a sparse step given a sparse ``.grad``
    (``Embedding(sparse=True)``), before anything is updated."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None and p.grad.is_sparse:
                name = type(optimizer).__name__
                raise RuntimeError(f"{name} does not support sparse gradients, please consider SparseAdam "
                                   "instead (or build the embedding without sparse=True)")


def hooked_step(step):
    """``step`` wrapped to run the global and per-optimizer step hooks around it."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        d = self.__dict__
        # torch's LRScheduler marks an optimizer that has stepped (``_opt_called``) to warn
        # when the scheduler's first step comes before it; every step passes here, so the
        # mark is set here (torch sets it through a wrapper the scheduler installs)
        d["_opt_called"] = True
        if _sparse_made[0] and not getattr(self, "_sparse_grads_ok", False):
            refuse_sparse_grads(self)
        if not (_global_optimizer_pre_hooks or _global_optimizer_post_hooks
                or d.get("_optimizer_step_pre_hooks") or d.get("_optimizer_step_post_hooks")):
            return step(self, *args, **kwargs)
        if d.get("_in_hooked_step"):  # super().step() inside a hooked subclass step
            return step(self, *args, **kwargs)
        call_args = (self, *args)
        for hook in [*_global_optimizer_pre_hooks.values(), *_hooks(self, "_optimizer_step_pre_hooks")]:
            result = hook(self, call_args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{result}. (An optimizer step pre-hook returns None or (args, kwargs).)"
                    )
                call_args, kwargs = result
        d["_in_hooked_step"] = True
        try:
            out = step(*call_args, **kwargs)
        finally:
            d["_in_hooked_step"] = False
        for hook in [*_hooks(self, "_optimizer_step_post_hooks"), *_global_optimizer_post_hooks.values()]:
            hook(self, call_args, kwargs)
        return out

    wrapper._hooked_step = True
    return wrapper


class OptimizerHooks:
    """The ``register_*_hook`` methods of ``Optimizer`` (torch's signatures)."""

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before ``step``."""
        return _register(self, "_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None`` after ``step``."""
        return _register(self, "_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None`` before ``state_dict`` builds the dict."""
        return _register(self, "_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict or None`` after ``state_dict``."""
        return _register(self, "_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict or None`` before ``load_state_dict``."""
        return _register(self, "_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None`` after ``load_state_dict``."""
        return _register(self, "_optimizer_load_state_dict_post_hooks", hook, prepend)

    def _run_state_dict_pre_hooks(self) -> None:
        for hook in _hooks(self, "_optimizer_state_dict_pre_hooks"):
            hook(self)

    def _run_state_dict_post_hooks(self, state_dict: dict) -> dict:
        for hook in _hooks(self, "_optimizer_state_dict_post_hooks"):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _run_load_state_dict_pre_hooks(self, state_dict: dict) -> dict:
        for hook in _hooks(self, "_optimizer_load_state_dict_pre_hooks"):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _run_load_state_dict_post_hooks(self) -> None:
        for hook in _hooks(self, "_optimizer_load_state_dict_post_hooks"):
            hook(self)


__all__ = ["register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "hooked_step", "OptimizerHooks"]
