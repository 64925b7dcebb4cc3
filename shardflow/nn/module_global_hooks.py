"""Hooks on every Module's call: ``torch.nn.modules.module.register_module_*_hook``.

Tools that watch a whole model without knowing its classes (a printout of every layer's
output shape, activation statistics, FLOP or memory counters) register them once. They run
before each module's own hooks of the same kind, as torch's (``Module.__call__`` reads
these dicts; ``_BackwardHookFn`` the backward ones). A handle's ``remove()`` unregisters.
"""

from __future__ import annotations

from collections import OrderedDict

from .removable_handle import RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]

FORWARD_PRE: OrderedDict = OrderedDict()
FORWARD: OrderedDict = OrderedDict()
FORWARD_WITH_KWARGS: dict = {}
FORWARD_ALWAYS_CALLED: dict = {}
BACKWARD_PRE: OrderedDict = OrderedDict()
BACKWARD: OrderedDict = OrderedDict()


def any_registered() -> bool:
    return bool(FORWARD_PRE or FORWARD or BACKWARD_PRE or BACKWARD)


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, args)`` before every module's forward; a returned value replaces args."""
    handle = RemovableHandle(FORWARD_PRE)
    FORWARD_PRE[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's forward; a returned value replaces the output."""
    handle = RemovableHandle(FORWARD, extra_dict=[FORWARD_WITH_KWARGS, FORWARD_ALWAYS_CALLED])
    FORWARD[handle.id] = hook
    if with_kwargs:
        FORWARD_WITH_KWARGS[handle.id] = True
    if always_call:
        FORWARD_ALWAYS_CALLED[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, grad_output)`` when every module's output gradients are computed."""
    handle = RemovableHandle(BACKWARD_PRE)
    BACKWARD_PRE[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` when every module's input gradients are
    computed."""
    handle = RemovableHandle(BACKWARD)
    BACKWARD[handle.id] = hook
    return handle
