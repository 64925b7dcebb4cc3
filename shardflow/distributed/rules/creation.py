"""Creation ops on a placement: ``shardflow.randn(4, 8, placement=p, sbp=sbp.split(0))``,
and ``*_like`` of a global tensor.

Any registered op called with ``placement=`` and ``sbp=`` (the handler sends it to
:func:`create`) makes the whole logical tensor on every rank with the op itself, then keeps
this rank's shard (``box_array`` from B: a local slice, no communication), so the values do
not depend on the layout (random ops: ranks must share the seed). ``zeros_like``-style ops
keep the template's layout (a Partial template falls back); ``rand*_like`` draw the whole
logical tensor too.
"""

from __future__ import annotations

from ...autograd import Tensor, _wrap
from ...backend.xp import get_array_module
from .. import layout
from ..boxing import box_array
from ..sbp import as_sbp_tuple, broadcast
from ..spec import GlobalSpec, make_global
from .propagate import mark_outputs
from .registry import RuleSet

__all__ = ["create", "family"]

family = RuleSet("creation")


def create(name, func, args, kwargs):
    """Any op called with ``placement=``/``sbp=``: the whole tensor on every rank, then this
    rank's shard (see the module docstring)."""
    kwargs = dict(kwargs)
    placement = kwargs.pop("placement", None)
    sbp = kwargs.pop("sbp", None)
    if placement is None or sbp is None:
        raise ValueError(f"{name}: pass both placement= and sbp= to create a global tensor")
    requires_grad = kwargs.pop("requires_grad", False)
    if placement.type != "cpu" and kwargs.get("device") is None:
        # OneFlow: the placement's type is the device (a "cuda" placement makes device shards,
        # on the current device, the one this rank's NCCL communicator bound).
        kwargs["device"] = placement.type
    full = func(*args, **kwargs)
    if full.device.type != placement.type:
        raise ValueError(
            f"{name}: device={kwargs['device']!r} does not match the placement's type "
            f"{placement.type!r}; leave device= out (the placement decides) or make them agree"
        )
    sbp = layout.normalize_dim_sbp(_as_tuple(sbp, placement), full.array.ndim)
    layout.validate(full.array.shape, placement.shape, sbp, name)
    local = box_array(full.array, placement, full.array.shape, (broadcast,) * placement.ndim, sbp, name)
    t = Tensor(local.copy() if local is full.array else local, requires_grad=requires_grad)
    return make_global(t, GlobalSpec(placement, sbp, full.array.shape))


def _as_tuple(sbp, placement):
    return as_sbp_tuple(sbp, placement.ndim)


@family.rule("zeros_like", "ones_like", "empty_like", "full_like")
def _like_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    sbp = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
    if sbp != spec.sbp:
        return NotImplemented
    rest = {k: v for k, v in kwargs.items()}
    local = func(_wrap_local(t), *args[1:], **rest)
    return mark_outputs(local, spec.placement, [sbp], [spec.shape])


@family.rule("rand_like", "randn_like", "randint_like")
def _random_like_rule(name, func, args, kwargs):
    # Draw the whole logical tensor (same values as one process), keep this rank's shard.
    t = args[0]
    spec = t._spec
    # The template has the shard's array module, so the draw lands on the shard's device.
    template = get_array_module(t.array).empty(spec.shape, dtype=t.array.dtype)
    full = func(_wrap_local_array(template), *args[1:], **kwargs)
    sbp = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
    local = box_array(full.array, spec.placement, spec.shape, (broadcast,) * len(sbp), sbp, name)
    out = Tensor(local)
    return make_global(out, GlobalSpec(spec.placement, sbp, spec.shape))


def _wrap_local(t):
    return _wrap_local_array(t.array)


def _wrap_local_array(array):
    return _wrap(array)
