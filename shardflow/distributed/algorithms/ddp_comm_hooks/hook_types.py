"""``DDPCommHookType`` and ``register_ddp_comm_hook`` (PyTorch's names): register a hook on a
DDP model by its enum name instead of by function.

Each member's value is a ``functools.partial`` as torch's, called with ``model=`` and
``state=`` (the process group, None for the world): the default hooks are registered as
``model.register_comm_hook(state, hook)``; the PowerSGD members wrap the group in a
``PowerSGDState(process_group=state, matrix_approximation_rank=1 or 2,
start_powerSGD_iter=1_000)`` first, as torch does (the batched members with
``batched_powerSGD_hook``). The quantization members, whose hooks shardflow lacks, raise an
error naming the hooks it has, before anything is registered.
"""

from __future__ import annotations

import enum
from functools import partial

from . import debugging_hooks, default_hooks, powerSGD_hook

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]

try:  # Python >= 3.11: a partial must be marked as a member (else it would become a method)
    from enum import member as _member
except ImportError:  # Python 3.10: a partial is a member already
    def _member(x):
        return x


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


def _powerSGD_comm_hook_wrapper(comm_hook, model, state, matrix_approximation_rank,  # noqa: N802
                                start_powerSGD_iter=1_000):  # noqa: N803 - torch's names
    ps = powerSGD_hook.PowerSGDState(process_group=state,
                                     matrix_approximation_rank=matrix_approximation_rank,
                                     start_powerSGD_iter=start_powerSGD_iter)
    model.register_comm_hook(ps, comm_hook)


def _missing(name, model, state, **_):
    raise NotImplementedError(
        f"DDPCommHookType.{name}: shardflow has no such hook. Its hooks: ALLREDUCE, "
        "FP16_COMPRESS, BF16_COMPRESS, POWER_SGD(_RANK2), BATCHED_POWER_SGD(_RANK2), NOOP "
        "(docs/AMP.md); FP16_COMPRESS / BF16_COMPRESS also halve the bytes sent"
    )


class DDPCommHookType(enum.Enum):
    """torch's hook types; ``DDPCommHookType.X.value(model=model, state=group)`` registers."""

    ALLREDUCE = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default_hooks.allreduce_hook))
    FP16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper,
                                    comm_hook=default_hooks.fp16_compress_hook))
    BF16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper,
                                    comm_hook=default_hooks.bf16_compress_hook))
    QUANTIZE_PER_TENSOR = _member(partial(_missing, "QUANTIZE_PER_TENSOR"))
    QUANTIZE_PER_CHANNEL = _member(partial(_missing, "QUANTIZE_PER_CHANNEL"))
    POWER_SGD = _member(partial(_powerSGD_comm_hook_wrapper,
                                comm_hook=powerSGD_hook.powerSGD_hook,
                                matrix_approximation_rank=1))
    POWER_SGD_RANK2 = _member(partial(_powerSGD_comm_hook_wrapper,
                                      comm_hook=powerSGD_hook.powerSGD_hook,
                                      matrix_approximation_rank=2))
    BATCHED_POWER_SGD = _member(partial(_powerSGD_comm_hook_wrapper,
                                        comm_hook=powerSGD_hook.batched_powerSGD_hook,
                                        matrix_approximation_rank=1))
    BATCHED_POWER_SGD_RANK2 = _member(partial(_powerSGD_comm_hook_wrapper,
                                              comm_hook=powerSGD_hook.batched_powerSGD_hook,
                                              matrix_approximation_rank=2))
    NOOP = _member(partial(_ddp_comm_hook_wrapper, comm_hook=debugging_hooks.noop_hook))


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model, state=None) -> None:
    """Register the hook ``comm_hook_type`` names on the DDP ``model`` (``state``: the group,
    None for the world), as ``comm_hook_type.value(model=model, state=state)``."""
    if not isinstance(comm_hook_type, DDPCommHookType):
        raise TypeError(f"register_ddp_comm_hook takes a DDPCommHookType, got "
                        f"{comm_hook_type!r}; e.g. DDPCommHookType.FP16_COMPRESS")
    comm_hook_type.value(model=model, state=state)
