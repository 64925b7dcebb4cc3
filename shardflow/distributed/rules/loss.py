"""Losses: ``cross_entropy``.

* logits ``(N, C)`` and targets ``(N,)`` split on the batch: the loss is computed per shard
  and P(sum) (``reduction="none"``: split like the batch); ``mean`` divides each shard's sum
  by the global count of non-ignored targets (one all-reduce of a scalar);
* logits split on the class dim: :func:`_vocab_parallel_cross_entropy` (Megatron's parallel
  cross-entropy), never gathering the logits;
* anything else (class weights, label smoothing, other ranks of input) falls back.
"""

from __future__ import annotations

import numpy as np

from ...autograd import Tensor
from ...autograd import dispatch as _dispatch
from ...backend.xp import get_array_module
from .. import layout
from ..boxing import all_reduce_on
from ..global_tensor import to_global, to_local
from ..sbp import Split, broadcast, partial_sum
from ..spec import GlobalSpec, make_global
from .propagate import run_on_shards
from .registry import RuleSet

__all__ = ["family", "to_broadcast_on"]

family = RuleSet("losses")


@family.rule("cross_entropy")
def _cross_entropy_rule(name, func, args, kwargs):
    x, target = args[0], args[1]
    extra = {k: v for k, v in kwargs.items() if k not in ("ignore_index", "reduction", "label_smoothing")}
    if len(args) > 2 or extra or x._spec is None or target._spec is None:
        return NotImplemented
    if kwargs.get("label_smoothing", 0.0):
        return NotImplemented
    reduction = kwargs.get("reduction", "mean")
    ignore_index = kwargs.get("ignore_index", -100)
    sx, st = x._spec, target._spec
    if len(sx.shape) != 2 or len(st.shape) != 1:
        return NotImplemented
    class_split = [k for k, s_ in enumerate(sx.sbp) if s_.is_split() and s_.dim == 1 and s_.blocks == 1]
    if len(class_split) == 1:
        return _vocab_parallel_cross_entropy(x, target, class_split[0], reduction, ignore_index)
    tx, tt, out = [], [], []
    for k in range(sx.placement.ndim):
        a, b = sx.sbp[k], st.sbp[k]
        if a.is_split() and a.dim == 0 or b.is_split() and b.dim == 0:
            tx.append(Split(0))
            tt.append(Split(0))
            out.append(Split(0) if reduction == "none" else partial_sum)
        else:
            tx.append(broadcast)
            tt.append(broadcast)
            out.append(broadcast)
    shape = (sx.shape[0],) if reduction == "none" else ()
    split_dims = [k for k in range(len(out)) if tx[k].is_split()]
    fn = func
    if reduction == "mean" and split_dims:
        placement = sx.placement

        def fn(x_local, t_local, **kw):
            kw = dict(kw, reduction="sum")
            loss = func(x_local, t_local, **kw)
            # Counted with the target's array module (a 0-d device array stays on the device).
            xp = get_array_module(t_local.array)
            valid = xp.array((t_local.array != ignore_index).sum(), dtype=xp.float64)
            for k in split_dims:
                valid = all_reduce_on(valid, placement, k, name, "forward")
            return loss / float(valid)

    return run_on_shards(name, fn, args, kwargs, {id(x): tuple(tx), id(target): tuple(tt)}, [tuple(out)], [shape])


def _vocab_parallel_cross_entropy(x, target, k, reduction, ignore_index):
    """Cross-entropy of logits split on the class dim (mesh dim ``k``) without gathering them
    (Megatron's parallel cross-entropy; PyTorch's ``loss_parallel``). Written in global ops:
    the row max (no gradient) and the sum of exponentials are all-reduced, ``(N,)`` each; the
    target's logit is picked by the rank that owns it and stays Partial until the loss is
    summed. Backward needs no collective: the gradient reaches each logit shard locally."""
    sx = x._spec
    p = sx.placement
    m = x.detach().amax(dim=1, keepdim=True)  # (N, 1) P(max) -> boxed to B where needed
    z = x - to_broadcast_on(m, k)  # (N, C) split on C
    lse = to_broadcast_on(z.exp().sum(1), k).log()  # (N,) one all_reduce(sum)
    lo, hi = layout.chunk_bounds(sx.shape[1], p.shape[k], p.index(k))
    # The target logit: a local pick on the owning rank, zero elsewhere -> Partial on k.
    t_b = target.to_global(sbp=tuple(broadcast if j == k else s for j, s in enumerate(target._spec.sbp)))
    t_arr = t_b.array
    own = (t_arr >= lo) & (t_arr < hi)
    local_t = Tensor(get_array_module(t_arr).where(own, t_arr - lo, 0).astype(np.int64))
    gather = _dispatch.OPS["gather"].__wrapped__
    z_local = to_local(z)  # (N, C_local), gradients flow back into z
    picked = gather(z_local, 1, local_t.unsqueeze(1)).squeeze(1) * Tensor(own.astype(z.array.dtype))
    out_sbp = tuple(partial_sum if j == k else (s if not s.is_partial() else broadcast)
                    for j, s in enumerate(z._spec.sbp))
    out_sbp = tuple(Split(0) if (s.is_split() and s.dim == 0) else s for s in out_sbp)
    picked = make_global(picked, GlobalSpec(p, out_sbp, (sx.shape[0],)))
    valid = t_b != ignore_index
    losses = (lse - picked) * valid  # (N,)
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    return total / valid.sum()


def to_broadcast_on(t, k):
    """``t`` boxed to B on mesh dim ``k`` (other dims unchanged)."""
    sbp = tuple(broadcast if j == k else s for j, s in enumerate(t._spec.sbp))
    return to_global(t, sbp=sbp)
