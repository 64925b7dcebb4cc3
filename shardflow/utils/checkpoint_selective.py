"""Selective activation checkpointing names of ``torch.utils.checkpoint``:
``CheckpointPolicy``, ``SelectiveCheckpointContext`` and ``create_selective_checkpoint_contexts``.

In torch, ``create_selective_checkpoint_contexts(policy)`` gives the pair of contexts that
``checkpoint(..., use_reentrant=False, context_fn=...)`` enters around the forward and the
recomputation; the policy says, op by op, which outputs to keep (``*_SAVE``) instead of
recomputing them. Keeping an output or recomputing it gives the same values and gradients
(checkpointing is deterministic: the RNG state is restored), so the policy is a memory/compute
trade, not a numerical choice. shardflow's checkpoint has no per-op saving: it recomputes the
whole region, which is the policy ``PREFER_RECOMPUTE`` for every op (torch's "vanilla
checkpointing"). Deviation from torch, stated plainly: the policy function is validated but not
called, and ``*_SAVE`` ops are recomputed too (same results, more compute, less memory).
"""

from __future__ import annotations

import contextlib
import enum

from ..ops._op_namespace import _AtenOverload

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with one op's output (torch's values)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """The context torch passes to a policy function (``is_recompute``, ``op_output``)."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``(forward_context, recompute_context)`` pair for ``checkpoint``'s ``context_fn``.

    ``policy_fn_or_list`` is a list of ops (``torch.ops.aten.mm.default``: those are saved in
    torch) or a function ``policy(ctx, op, *args, **kwargs) -> CheckpointPolicy``; anything
    else raises torch's TypeError, a list holding something other than an op torch's
    ValueError. ``allow_cache_entry_mutation`` is about torch's cache of saved outputs, which
    does not exist here (nothing is cached, so nothing cached can be mutated). Both contexts are no-ops here: the whole region is recomputed (see the module
    docstring; values and gradients are torch's)."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, _AtenOverload) or op._overloadname is None:  # None: a packet (aten.mm)
                raise ValueError(
                    f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                    "Pass one overload of an op: for `torch.ops.aten.mm`, `torch.ops.aten.mm.default`.")
    elif not callable(policy_fn_or_list):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return contextlib.nullcontext(), contextlib.nullcontext()
