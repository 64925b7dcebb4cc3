"""The fallback for an op with no sbp rule for its arguments: gather -> compute -> re-shard.

Every global input is boxed to B (each rank gathers the whole tensor), the op runs on whole
tensors on every rank, and an output of the first input's shape goes back to that input's
layout (others stay B). Correct and differentiable (boxing is), but it moves whole tensors,
so it is made visible twice: a warning, once per op and process, and an entry in every open
``comm_plan()`` (``plan.fallbacks``, printed with the plan), besides the collectives it
causes, which the plan lists under the op's name.
"""

from __future__ import annotations

import warnings

from ...autograd import Tensor
from .. import plan
from ..global_tensor import to_global
from ..sbp import broadcast
from ..spec import GlobalSpec, make_global
from .propagate import run_on_shards

__all__ = ["fallback", "forget_warnings"]

_warned: set[str] = set()  # ops warned about in this process (once per op)


def forget_warnings() -> None:
    """Warn again about every op (``route.disable()`` calls it: no state outlives the route)."""
    _warned.clear()


def fallback(name, func, args, kwargs, gts):
    """Gather every input to B, run on whole tensors, re-shard like the first input."""
    plan.record_fallback(name)
    if name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"shardflow: op '{name}' has no sbp rule for these inputs; it ran as gather -> "
            "compute -> re-shard (correct, but it moves whole tensors)",
            stacklevel=4,
        )
    p = gts[0]._spec.placement
    allb = (broadcast,) * p.ndim
    targets = {id(t): allb for t in gts}
    first = gts[0]._spec
    # Shapes of the outputs: run on whole tensors, then re-shard where the shape allows.
    out = run_on_shards(name, func, args, kwargs, targets, [allb], [None])
    return _reshard_like(out, first)


def _reshard_like(out, first):
    def fix(o):
        if not isinstance(o, Tensor):
            return o
        o._spec = None
        g = make_global(o, GlobalSpec(first.placement, (broadcast,) * first.placement.ndim, o.array.shape))
        if tuple(o.array.shape) == first.shape and first.sbp != g._spec.sbp and not any(
            s.is_partial() for s in first.sbp
        ):
            return to_global(g, sbp=first.sbp)
        return g

    if isinstance(out, Tensor):
        return fix(out)
    if isinstance(out, tuple):
        items = [fix(o) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    return out
