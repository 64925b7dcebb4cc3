"""``register_fsdp_forward_method(module, method_name)`` (PyTorch FSDP2's name).

FSDP gathers a unit's parameters before ``forward`` and frees them after (its forward hooks);
a model whose inference entry point is another method (``model.generate(...)``) calls that
method without ``forward``, so the parameters would stay sharded. This wraps the method on
the instance, as torch does, so it runs fully_shard's pre-forward (unshard) and post-forward
(reshard, backward hooks) steps around it. A module that is not an ``FSDPModule`` is left
alone (torch's no-op, so the same script runs with and without FSDP).

Deviation: fully_shard's ``MixedPrecisionPolicy`` input cast (a forward pre-hook of its own)
is not applied to a registered method's arguments; cast them before the call if the policy
has ``cast_forward_inputs``.
"""

from __future__ import annotations

import functools

from .fully_shard import FSDPModule, _post_forward, _pre_forward

__all__ = ["register_fsdp_forward_method"]


def register_fsdp_forward_method(module, method_name: str) -> None:
    """Make ``module.<method_name>`` run FSDP's pre-/post-forward steps (module docstring)."""
    if not isinstance(module, FSDPModule):
        return  # torch's no-op: the same call works without FSDP
    if not hasattr(module, method_name):
        raise ValueError(f"{type(module)} does not have a method {method_name}")
    orig_method = getattr(module, method_name)

    @functools.wraps(orig_method)
    def wrapped_method(*args, **kwargs):
        _pre_forward(module, args)
        out = orig_method(*args, **kwargs)
        _post_forward(module, args, out)
        return out

    setattr(module, method_name, wrapped_method)
