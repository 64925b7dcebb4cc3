"""Indexing: ``getitem`` with basic indices (ints, slices, ``None``, ``Ellipsis``).

A split dim taken whole keeps its split (renumbered past removed/added dims); a split dim
that is sliced or indexed by an int is gathered first (boxed to B on that mesh dimension),
then indexed locally. Advanced indices (tensors, lists, bools) fall back.
"""

from __future__ import annotations

from ...autograd import dispatch as _dispatch
from ..global_tensor import to_global
from ..sbp import Split, broadcast
from .propagate import run_on_shards
from .registry import RuleSet

__all__ = ["family"]

family = RuleSet("indexing")


def _basic_index(index, nd):
    """For basic indexing (ints, slices, None, Ellipsis): list of (input dim or None, kind)."""
    if not isinstance(index, tuple):
        index = (index,)
    if any(not (isinstance(i, int | slice) or i is None or i is Ellipsis) or isinstance(i, bool) for i in index):
        return None
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    out = []
    d = 0
    for i in index:
        if i is Ellipsis:
            for _ in range(nd - n_real):
                out.append((d, slice(None)))
                d += 1
        elif i is None:
            out.append((None, None))
        else:
            out.append((d, i))
            d += 1
    while d < nd:
        out.append((d, slice(None)))
        d += 1
    return out


@family.rule("getitem")
def _getitem_rule(name, func, args, kwargs):
    t, index = args[0], args[1]
    spec = t._spec
    nd = len(spec.shape)
    items = _basic_index(index, nd)
    if items is None:
        return NotImplemented
    split_dims = {s.dim for s in spec.sbp if s.is_split()}
    out_dim_of = {}
    shape = []
    od = 0
    for d, i in items:
        if d is None:
            shape.append(1)
            od += 1
        elif isinstance(i, slice):
            n = len(range(*i.indices(spec.shape[d])))
            if d in split_dims and i != slice(None) and n != spec.shape[d]:
                target = tuple(broadcast if (s.is_split() and s.dim == d) else s for s in spec.sbp)
                return _dispatch.OPS["getitem"](to_global(t, sbp=target), index)
            out_dim_of[d] = od
            shape.append(n)
            od += 1
        else:
            if d in split_dims:
                target = tuple(broadcast if (s.is_split() and s.dim == d) else s for s in spec.sbp)
                return _dispatch.OPS["getitem"](to_global(t, sbp=target), index)
    out = tuple(Split(out_dim_of[s.dim], s.blocks) if s.is_split() else s for s in spec.sbp)
    return run_on_shards(name, func, args, kwargs, {}, [out], [tuple(shape)])
