"""Reductions: ``sum``, ``mean``, ``amax``, ``amin``.

Per mesh dimension: a split on a reduced dim gives a Partial output — ``sum``/``mean`` ->
P(sum) (``mean`` divides each shard's sum by the *global* count, so the shards add up to
the mean), ``amax`` -> P(max) when no gradient is needed (with autograd the dim is gathered:
P(max)'s gradient would reach every shard's local maximum, not only the global one);
``amin`` gathers it. A split on a kept dim stays (renumbered without ``keepdim``). A
Partial input stays Partial where the reduction commutes with it (sum of P(sum), amax of
P(max)); other Partials are boxed to B first.
"""

from __future__ import annotations

import math

from ...autograd import Tensor
from ...autograd import dispatch as _dispatch
from ..sbp import Split, broadcast, partial_max, partial_sum
from .propagate import run_on_shards
from .registry import RuleSet

__all__ = ["family"]

family = RuleSet("reductions")


def _reduce_dims(dim, nd):
    if dim is None or dim == () or dim == []:
        return tuple(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % nd if nd else 0 for d in dim))


@family.rule("sum", "mean", "amax", "amin")
def _reduce_rule(name, func, args, kwargs):
    t = args[0]
    if not isinstance(t, Tensor) or t._spec is None or len(args) > 3:
        return NotImplemented
    spec = t._spec
    nd = len(spec.shape)
    dim = args[1] if len(args) > 1 else kwargs.get("dim", None)
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if name == "amax" and dim is None:
        dim = ()
    dims = _reduce_dims(dim, nd)
    target = list(spec.sbp)
    out = []
    kept = [d for d in range(nd) if d not in dims]
    for k, s in enumerate(spec.sbp):
        if s.is_split() and s.dim in dims:
            if name in ("sum", "mean"):
                out.append(partial_sum)
            elif name == "amax" and not t.requires_grad:
                # P(max) is exact for values; its gradient would reach every shard's local
                # max, not only the global one, so with autograd the dim is gathered.
                out.append(partial_max)
            else:
                target[k] = broadcast
                out.append(broadcast)
        elif s.is_split():
            out.append(Split(s.dim if keepdim else kept.index(s.dim), s.blocks))
        elif s.is_partial():
            if (name in ("sum", "mean") and s.op == "sum") or (name == "amax" and s.op == "max"):
                out.append(s)
            else:
                target[k] = broadcast
                out.append(broadcast)
        else:
            out.append(broadcast)
    out_shape = tuple(1 if d in dims else spec.shape[d] for d in range(nd)) if keepdim else tuple(
        spec.shape[d] for d in kept
    )
    fn = func
    if name == "mean" and any(s.is_split() and s.dim in dims for s in target):
        count = math.prod(spec.shape[d] for d in dims)
        plain_sum = _dispatch.OPS["sum"].__wrapped__

        def fn(x, *a, **kw):  # local sum / global count: the shards' means add up exactly
            return plain_sum(x, *a, **kw) / count

    return run_on_shards(name, fn, args, kwargs, {id(t): tuple(target)}, [tuple(out)], [out_shape])
