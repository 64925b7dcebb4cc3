"""nn ops: embedding, softmax / log_softmax, layer_norm / rms_norm, attention, convolution,
dropout.

* ``embedding``: indices split -> output split alike; weight split on the embedding dim ->
  output split on its last dim; weight split on the vocabulary with whole indices -> each
  rank looks up the ids it owns and the output is P(sum) (vocabulary-parallel embedding);
* ``softmax``/``log_softmax``, ``layer_norm``/``rms_norm``: splits on the normalised dims
  (and Partials) are gathered, others stay; affine parameters are used whole;
* ``scaled_dot_product_attention``: batch and head splits (alike on q, k, v) stay, L/S/E
  are gathered; a mask falls back;
* ``conv1d/2d/3d``: a batch split stays (weight whole), or an output-channel split of the
  weight gives a channel-split output; uneven splits are gathered (kernels need non-empty
  shards); ``groups != 1`` falls back;
* dropout with ``p == 0`` or ``training=False`` keeps the layout; a real mask falls back
  (one process's mask needs the whole tensor).
"""

from __future__ import annotations

from ...autograd import Tensor
from ...autograd import dispatch as _dispatch
from ...backend.xp import get_array_module
from .. import layout
from ..sbp import Split, broadcast, partial_sum
from .propagate import run_on_shards
from .registry import RuleSet

__all__ = ["family"]

family = RuleSet("nn")


@family.rule("embedding")
def _embedding_rule(name, func, args, kwargs):
    """Index split -> output split; weight split on the embedding dim -> output split on the
    last dim; weight split on the vocabulary (dim 0) with whole indices -> each rank looks up
    the ids it owns, zeros the others, and the output is Partial (Megatron's vocabulary-
    parallel embedding: the all-reduce comes when the sum is first needed whole)."""
    idx, w = args[0], args[1]
    max_norm = args[3] if len(args) > 3 else kwargs.get("max_norm")
    padding_idx = args[2] if len(args) > 2 else kwargs.get("padding_idx")
    if idx._spec is None or w._spec is None or max_norm is not None:
        return NotImplemented
    si, sw = idx._spec, w._spec
    ti, tw, out = list(si.sbp), list(sw.sbp), []
    nd = len(si.shape)
    vocab_dims = []
    for k in range(len(ti)):
        a, b = ti[k], tw[k]
        if b.is_split() and b.dim == 1 and a.is_broadcast():
            out.append(Split(nd, b.blocks))
            continue
        if a.is_partial():
            return NotImplemented
        others = [m for m in range(len(tw)) if m != k and tw[m].is_split() and tw[m].dim == 0]
        if b.is_split() and b.dim == 0 and b.blocks == 1 and a.is_broadcast() and not others \
                and padding_idx is None:
            vocab_dims.append(k)
            out.append(partial_sum)
            continue
        tw[k] = broadcast
        out.append(a if a.is_split() else broadcast)
    shape = (*si.shape, sw.shape[1])
    fn = func
    if vocab_dims:
        p = sw.placement
        k = vocab_dims[0]
        lo, hi = layout.chunk_bounds(sw.shape[0], p.shape[k], p.index(k))
        lookup = _dispatch.OPS["embedding"].__wrapped__

        def fn(ids, weight, *rest, **kw):
            ids_arr = ids.array
            own = (ids_arr >= lo) & (ids_arr < hi)
            local_ids = Tensor(get_array_module(ids_arr).where(own, ids_arr - lo, 0))
            mask = Tensor(own[..., None].astype(weight.array.dtype))
            return lookup(local_ids, weight) * mask

    return run_on_shards(name, fn, args, kwargs, {id(idx): tuple(ti), id(w): tuple(tw)}, [tuple(out)], [shape])


def _keep_unless(spec, dims):
    """Target sbp: splits on ``dims`` and partials become B; output the same."""
    tgt = tuple(broadcast if (s.is_partial() or (s.is_split() and s.dim in dims)) else s for s in spec.sbp)
    return tgt


@family.rule("softmax", "log_softmax")
def _softmax_rule(name, func, args, kwargs):
    t = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return NotImplemented
    nd = len(t._spec.shape)
    tgt = _keep_unless(t._spec, {dim % nd})
    return run_on_shards(name, func, args, kwargs, {id(t): tgt}, [tgt], [t._spec.shape])


@family.rule("layer_norm", "rms_norm")
def _layer_norm_rule(name, func, args, kwargs):
    x = args[0]
    nshape = args[1] if len(args) > 1 else kwargs.get("normalized_shape")
    nshape = (nshape,) if isinstance(nshape, int) else tuple(nshape)
    nd = len(x._spec.shape)
    norm_dims = set(range(nd - len(nshape), nd))
    tgt = _keep_unless(x._spec, norm_dims)
    targets = {id(x): tgt}
    allb = (broadcast,) * len(tgt)
    for p in list(args[2:]) + list(kwargs.values()):
        if isinstance(p, Tensor) and p._spec is not None:
            targets[id(p)] = allb
    return run_on_shards(name, func, args, kwargs, targets, [tgt], [x._spec.shape])


@family.rule("scaled_dot_product_attention")
def _sdpa_rule(name, func, args, kwargs):
    q, k, v = args[:3]
    if any(a._spec is None for a in (q, k, v)) or (len(args) > 3 and args[3] is not None) or kwargs.get("attn_mask") is not None:
        return NotImplemented
    nd = len(q._spec.shape)
    # Batch and head dims may stay split (the same way on q, k and v); L, S and E may not.
    tgt = _keep_unless(q._spec, {nd - 2, nd - 1})
    if any(x._spec.shape[:-2] != q._spec.shape[:-2] for x in (k, v)):
        return NotImplemented
    targets = {id(x): tgt for x in (q, k, v)}
    shape = (*q._spec.shape[:-1], v._spec.shape[-1])
    return run_on_shards(name, func, args, kwargs, targets, [tgt], [shape])


@family.rule("conv2d", "conv1d", "conv3d")
def _conv_rule(name, func, args, kwargs):
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if x._spec is None or w._spec is None:
        return NotImplemented
    groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
    if groups != 1:
        return NotImplemented
    sx, sw = x._spec, w._spec
    tx, tw, out = list(sx.sbp), list(sw.sbp), []
    mesh = sx.placement.shape
    for k in range(sx.placement.ndim):
        a, b = tx[k], tw[k]
        # The conv kernels need non-empty shards: uneven splits are gathered.
        if a.is_split() and sx.shape[a.dim] % mesh[k]:
            a = tx[k] = broadcast
        if b.is_split() and sw.shape[b.dim] % mesh[k]:
            b = tw[k] = broadcast
        if a.is_split() and a.dim == 0:
            tw[k] = broadcast
            out.append(a)
        elif b.is_split() and b.dim == 0 and not a.is_partial():
            tx[k] = broadcast
            out.append(Split(1, b.blocks))
        else:
            tx[k] = broadcast
            tw[k] = broadcast
            out.append(broadcast)
    # Output spatial size: run the op's shape arithmetic on the shard (spatial dims whole).
    targets = {id(x): tuple(tx), id(w): tuple(tw)}
    if bias is not None and bias._spec is not None:
        targets[id(bias)] = tuple(Split(0) if o.is_split() and o.dim == 1 else broadcast for o in out)
    res = run_on_shards(name, func, args, kwargs, targets, [tuple(out)], [None])
    spatial = res.array.shape[2:]
    res._spec.shape = (sx.shape[0], sw.shape[0], *spatial)
    return res


@family.rule("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout_rule(name, func, args, kwargs):
    p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
    training = args[2] if len(args) > 2 else kwargs.get("training", True)
    if p == 0 or not training:
        t = args[0]
        return run_on_shards(name, func, args, kwargs, {}, [t._spec.sbp], [t._spec.shape])
    return NotImplemented  # a mask that matches one process needs the whole tensor
