"""The global handler: the function the op dispatch hook calls once the global route is on.

``handle(name, func, args, kwargs)`` sees every registered op call (``autograd/dispatch``;
installed by ``route.enable()``). Its steps, cheapest first, since every op call pays them:

1. ``placement=``/``sbp=`` keywords: a creation op making a global tensor (``creation.py``);
2. no global argument: the plain op, unchanged;
3. global arguments on different placements: refused;
4. local tensors next to global ones are promoted to broadcast (:func:`promote_locals`);
5. the op's rule from :data:`RULES` (one lookup by the op's registered name), unless it
   returns ``NotImplemented``;
6. otherwise gather -> compute -> re-shard (``fallback.py``: warned, listed by ``comm_plan()``).
"""

from __future__ import annotations

from ...autograd import Tensor
from ..global_tensor import from_local
from ..sbp import broadcast
from . import creation, elementwise, index, loss, matmul, nn, reduce, shape
from .creation import create
from .fallback import fallback
from .propagate import global_tensors_in, local_tensors_in
from .registry import build_table

__all__ = ["handle", "promote_locals", "RULES", "FAMILIES"]

# The op families, each with its own rules (a name claimed by two is refused at import).
FAMILIES = (creation.family, elementwise.family, reduce.family, matmul.family, shape.family,
            index.family, nn.family, loss.family)
RULES = build_table(*FAMILIES)


def handle(name, func, args, kwargs):
    """The global handler installed in the dispatch hook (see the module docstring)."""
    if "placement" in kwargs or "sbp" in kwargs:
        return create(name, func, args, kwargs)
    gts = global_tensors_in(args, kwargs)
    if not gts:
        return func(*args, **kwargs)
    p = gts[0]._spec.placement
    for t in gts[1:]:
        if t._spec.placement != p:
            raise ValueError(
                f"{name}: global tensors on different placements ({p} and "
                f"{t._spec.placement}); move them to one placement first"
            )
    local = local_tensors_in(args, kwargs)
    if local:
        args, kwargs = promote_locals(name, p, args, kwargs, local)
    r = RULES.get(name)
    if r is not None:
        out = r(name, func, args, kwargs)
        if out is not NotImplemented:
            return out
    return fallback(name, func, args, kwargs, gts)


def promote_locals(name, placement, args, kwargs, local):
    """A local tensor next to global ones is taken as broadcast (the same values on every
    rank, as ``torch.arange`` positions are). One that requires grad is refused: its
    gradient would be ambiguous."""
    grad = [t for t in local if t.requires_grad]
    if grad:
        raise ValueError(
            f"{name}: mixes global tensors with a local tensor of shape {tuple(grad[0].shape)} "
            "that requires grad; make it global first, e.g. "
            "x.to_global(placement, sbp.broadcast) if every rank holds the same values"
        )
    allb = (broadcast,) * placement.ndim
    made = {id(t): from_local(t, placement, allb) for t in local}
    return tuple(_promoted(a, made) for a in args), {k: _promoted(v, made) for k, v in kwargs.items()}


def _promoted(a, made):
    """``a`` with each local tensor in ``made`` replaced by its global form (inside lists and
    tuples too). Module level, not a recursive closure: that would be a reference cycle keeping
    the op's arguments alive until the cyclic collector runs (``propagate._substitute``)."""
    if isinstance(a, Tensor) and id(a) in made:
        return made[id(a)]
    if isinstance(a, list | tuple) and not hasattr(a, "_fields") and any(
        isinstance(x, Tensor) and id(x) in made for x in a
    ):
        return type(a)(_promoted(x, made) for x in a)
    return a
