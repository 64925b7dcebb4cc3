"""Matrix products: ``matmul``, ``mm``, ``bmm``, ``linear`` (``x @ w.T + b``).

Per mesh dimension (a, b both >= 2-D):

* contraction split (``a`` on its last dim, ``b`` on its row dim; the other operand is
  split to match) -> P(sum): Megatron's row parallel;
* ``a`` split on a batch or row dim -> output split there, ``b`` whole (or split alike on a
  matching batch dim): data parallel;
* ``b`` split on its column dim -> output split on its last dim, ``a`` whole: column
  parallel;
* one operand P(sum) and the other B -> P(sum);
* otherwise both B.

``linear`` reads its weight ``(out, in)`` as ``b = w.T`` (a split on out is a column split,
on in a row split) and adds the bias afterwards with the elementwise rule (exact on a
Partial output, sliced on a column split).
"""

from __future__ import annotations

from ...autograd import dispatch as _dispatch
from ..sbp import Split, broadcast, partial_sum
from ..spec import GlobalSpec
from .propagate import broadcast_shape, run_on_shards
from .registry import RuleSet

__all__ = ["family"]

family = RuleSet("matmul")


def _mm_plan(a_spec, b_spec, a_nd, b_nd, out_nd):
    """Per mesh dim: targets for (a, b) and the output sbp of ``a @ b`` (both >= 2-D)."""
    ta, tb, out = list(a_spec.sbp), list(b_spec.sbp), []
    for k in range(len(ta)):
        sa, sb = ta[k], tb[k]
        a_kdim, a_mdim = a_nd - 1, a_nd - 2
        b_kdim, b_ndim = b_nd - 2, b_nd - 1
        if sa.is_split() and sa.dim == a_kdim and sa.blocks == 1:
            if not (sb.is_split() and sb.dim == b_kdim):
                tb[k] = Split(b_kdim)
            out.append(partial_sum)
        elif sb.is_split() and sb.dim == b_kdim and sb.blocks == 1:
            ta[k] = Split(a_kdim)
            out.append(partial_sum)
        elif sa.is_split() and sa.dim < a_kdim:
            # a split on a batch or row dim: b must be whole (or split on a batch dim alike)
            od = sa.dim + out_nd - a_nd
            if sa.dim == a_mdim or b_nd == 2:
                tb[k] = broadcast
            else:
                bd = od - (out_nd - b_nd)
                tb[k] = Split(bd, sa.blocks) if bd >= 0 and b_spec.shape[bd] != 1 else broadcast
            out.append(Split(od, sa.blocks))
        elif sb.is_split() and sb.dim == b_ndim:
            ta[k] = broadcast
            out.append(Split(out_nd - 1, sb.blocks))
        elif sb.is_split():  # a batch dim of b
            od = sb.dim + out_nd - b_nd
            ad = od - (out_nd - a_nd)
            ta[k] = Split(ad, sb.blocks) if ad >= 0 and a_spec.shape[ad] != 1 else broadcast
            out.append(Split(od, sb.blocks))
        elif sa.is_partial() and sa.op == "sum" and sb.is_broadcast():
            out.append(partial_sum)
        elif sb.is_partial() and sb.op == "sum" and sa.is_broadcast():
            out.append(partial_sum)
        else:
            ta[k] = broadcast
            tb[k] = broadcast
            out.append(broadcast)
    return tuple(ta), tuple(tb), tuple(out)


@family.rule("matmul", "mm", "bmm")
def _matmul_rule(name, func, args, kwargs):
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = args
    if a._spec is None or b._spec is None:
        return NotImplemented
    sa, sb = a._spec, b._spec
    if len(sa.shape) < 2 or len(sb.shape) < 2:
        return NotImplemented
    batch = broadcast_shape([sa.shape[:-2], sb.shape[:-2]])
    out_shape = (*batch, sa.shape[-2], sb.shape[-1])
    ta, tb, out = _mm_plan(sa, sb, len(sa.shape), len(sb.shape), len(out_shape))
    targets = {id(a): ta} if a is b else {id(a): ta, id(b): tb}
    if a is b and ta != tb:
        return NotImplemented
    return run_on_shards(name, func, args, kwargs, targets, [out], [out_shape])


@family.rule("linear")
def _linear_rule(name, func, args, kwargs):
    x = args[0]
    w = args[1] if len(args) > 1 else kwargs.get("weight")
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if x._spec is None or w._spec is None or len(w._spec.shape) != 2 or len(x._spec.shape) < 1:
        return NotImplemented
    if bias is not None and bias._spec is None:
        return NotImplemented
    sx, sw = x._spec, w._spec
    x_nd = max(len(sx.shape), 2)
    # x @ w.T: w (out, in) split on out (0) is b's column split, on in (1) is b's row split.
    wt = [Split(1 - s.dim, s.blocks) if s.is_split() else s for s in sw.sbp]
    wt_spec = GlobalSpec(sw.placement, wt, (sw.shape[1], sw.shape[0]))
    xs = sx if len(sx.shape) >= 2 else GlobalSpec(sx.placement, sx.sbp, (1, *sx.shape))
    ta, tb, out = _mm_plan(xs, wt_spec, x_nd, 2, x_nd)
    tw = tuple(Split(1 - s.dim, s.blocks) if s.is_split() else s for s in tb)
    out_shape = (*sx.shape[:-1], sw.shape[0])
    if len(sx.shape) == 1:
        ta = tuple(Split(s.dim - 1, s.blocks) if s.is_split() else s for s in ta)
        out = tuple(Split(s.dim - 1, s.blocks) if s.is_split() else s for s in out)
    targets = {id(x): ta, id(w): tw} if x is not w else {id(x): ta}
    if bias is None:
        return run_on_shards(name, func, (x, w), {}, targets, [out], [out_shape])
    # The bias joins like an elementwise add: exact on Partial, sliced on a column split.
    y = run_on_shards(name, func, (x, w), {}, targets, [out], [out_shape])
    return _dispatch.OPS["add"](y, bias)
