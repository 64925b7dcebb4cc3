"""Sbp propagation: how each op runs on global tensors.

Every registered op reaches :func:`handle` once a placement exists (the dispatch hook in
``autograd/dispatch.py``). With no global argument the op runs as usual. Otherwise a rule
of the op's family decides, per mesh dimension, the sbp each input must have (inserting
boxing where the inputs disagree) and the sbp and logical shape of each output; the op then
runs on the shards. Families:

* elementwise (with broadcasting; add/sub/mul/div/neg keep Partial where that is exact),
* reductions (a reduced split dim becomes Partial: sum/mean -> P, amax -> P(max)),
* matmul / linear (data parallel, Megatron column and row parallel, Partial operands),
* shape ops (view/reshape/flatten/squeeze/unsqueeze, transpose/permute, split/chunk,
  cat/stack, expand, basic indexing),
* embedding, softmax / log_softmax, layer_norm, attention, cross_entropy, conv2d,
* creation ops with ``placement=``/``sbp=`` and ``*_like`` of global tensors,
* in-place versions of elementwise ops.

An op with no rule (or an argument pattern its rule does not cover) falls back to
gather -> compute -> re-shard: every input is boxed to B, the op runs on whole tensors on
every rank, and an output of the first input's shape goes back to that input's layout.
It is correct (boxing is differentiable) but moves whole tensors, so it warns once per op.

Gradient convention (``sbp.grad_sbp``): when an input is B on a mesh dimension where an
output is not B, that input's local gradient is only a partial sum, so the input is wrapped
in ``BroadcastUse`` whose backward all-reduces it (Megatron's ``f``; data parallel's
gradient all-reduce).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import Tensor
from ..autograd import dispatch as _dispatch
from ..backend.xp import get_array_module
from . import layout
from .boxing import Boxing, BroadcastUse
from .sbp import Split, broadcast, partial_max, partial_sum

__all__ = ["handle", "RULES"]

RULES: dict = {}
_warned: set[str] = set()


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn

    return deco


# ----------------------------------------------------------------------------- plumbing
def _globals(args, kwargs) -> list[Tensor]:
    found = []
    for a in args:
        if isinstance(a, Tensor):
            if a._spec is not None:
                found.append(a)
        elif isinstance(a, list | tuple):
            found.extend(x for x in a if isinstance(x, Tensor) and x._spec is not None)
    for a in kwargs.values():
        if isinstance(a, Tensor) and a._spec is not None:
            found.append(a)
    return found


def _locals(args, kwargs) -> list[Tensor]:
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and a._spec is None:
            out.append(a)
        elif isinstance(a, list | tuple):
            out.extend(x for x in a if isinstance(x, Tensor) and x._spec is None)
    return out


def handle(name, func, args, kwargs):
    """The global handler installed in the dispatch table (see the module docstring)."""
    if "placement" in kwargs or "sbp" in kwargs:
        return _create(name, func, args, kwargs)
    gts = _globals(args, kwargs)
    if not gts:
        return func(*args, **kwargs)
    p = gts[0]._spec.placement
    for t in gts[1:]:
        if t._spec.placement != p:
            raise ValueError(
                f"{name}: global tensors on different placements ({p} and "
                f"{t._spec.placement}); move them to one placement first"
            )
    local = _locals(args, kwargs)
    if local:
        args, kwargs = _promote_locals(name, p, args, kwargs, local)
    r = RULES.get(name)
    if r is None and name.endswith("_") and name[:-1] in ELEMENTWISE:
        r = _inplace_rule
    if r is None and name in ELEMENTWISE:
        r = _elementwise_rule
    if r is not None:
        out = r(name, func, args, kwargs)
        if out is not NotImplemented:
            return out
    return _fallback(name, func, args, kwargs, gts)


def _promote_locals(name, placement, args, kwargs, local):
    """A local tensor next to global ones is taken as broadcast (the same values on every
    rank, as ``torch.arange`` positions are). One that requires grad is refused: its
    gradient would be ambiguous."""
    from .global_tensor import from_local

    grad = [t for t in local if t.requires_grad]
    if grad:
        raise ValueError(
            f"{name}: mixes global tensors with a local tensor of shape {tuple(grad[0].shape)} "
            "that requires grad; make it global first, e.g. "
            "x.to_global(placement, sbp.broadcast) if every rank holds the same values"
        )
    allb = (broadcast,) * placement.ndim
    made = {id(t): from_local(t, placement, allb) for t in local}

    def sub(a):
        if isinstance(a, Tensor) and id(a) in made:
            return made[id(a)]
        if isinstance(a, list | tuple) and not hasattr(a, "_fields") and any(
            isinstance(x, Tensor) and id(x) in made for x in a
        ):
            return type(a)(sub(x) for x in a)
        return a

    return tuple(sub(a) for a in args), {k: sub(v) for k, v in kwargs.items()}


def _run(name, func, args, kwargs, targets, out_sbps, out_shapes, local_args=None):
    """Box inputs to ``targets`` (id -> sbp tuple), wrap B inputs whose gradient will be
    partial, run ``func`` on shards and give each output its (sbp, shape).

    ``local_args(args, kwargs, prepared)`` may rewrite arguments that depend on the local
    shape (e.g. a view's size); ``prepared`` maps id(global) -> its local tensor.
    """
    prepared = {}
    stripped = []
    mesh_nd = None
    out_nonb = None
    for t in _globals(args, kwargs):
        if id(t) in prepared:
            continue
        spec = t._spec
        if mesh_nd is None:
            mesh_nd = spec.placement.ndim
            out_nonb = [k for k in range(mesh_nd) if any(not s[k].is_broadcast() for s in out_sbps)]
        tgt = targets.get(id(t), spec.sbp)
        cur = t
        if tuple(tgt) != spec.sbp:
            layout.validate(spec.shape, spec.placement.shape, tgt, name)
            cur = Boxing.apply(t, spec.placement, spec.shape, spec.sbp, tuple(tgt), name)
        mesh = spec.placement.shape
        wrap = [k for k in out_nonb if tgt[k].is_broadcast() and mesh[k] > 1] if t.requires_grad else []
        if wrap:
            cur = BroadcastUse.apply(cur, spec.placement, tuple(wrap), name)
        if cur is t:
            stripped.append((t, spec))
        prepared[id(t)] = cur
    placement = next(iter(_globals(args, kwargs)))._spec.placement

    def sub(a):
        if isinstance(a, Tensor) and a._spec is not None:
            return prepared[id(a)]
        if isinstance(a, list | tuple) and any(isinstance(x, Tensor) and x._spec is not None for x in a):
            return type(a)(sub(x) for x in a) if not hasattr(a, "_fields") else a
        return a

    largs = [sub(a) for a in args]
    lkw = {k: sub(v) for k, v in kwargs.items()}
    if local_args is not None:
        largs, lkw = local_args(largs, lkw)
    for t, _ in stripped:
        t._spec = None
    try:
        out = func(*largs, **lkw)
    finally:
        for t, spec in stripped:
            t._spec = spec
    return _mark(out, placement, out_sbps, out_shapes, stripped)


def _mark(out, placement, out_sbps, out_shapes, stripped=()):
    from .global_tensor import GlobalSpec, make_global

    inputs = {id(t) for t, _ in stripped}
    if isinstance(out, Tensor):
        if id(out) in inputs:  # the op returned its input (contiguous(), to(same dtype))
            return out
        shape = out_shapes[0] if out_shapes[0] is not None else out.array.shape
        return make_global(out, GlobalSpec(placement, out_sbps[0], shape))
    if isinstance(out, tuple):
        items = list(out)
        j = 0
        for _i, o in enumerate(items):
            if isinstance(o, Tensor) and id(o) not in inputs:
                sbp_i = out_sbps[min(j, len(out_sbps) - 1)]
                shape_i = out_shapes[min(j, len(out_shapes) - 1)]
                shape_i = shape_i if shape_i is not None else o.array.shape
                make_global(o, GlobalSpec(placement, sbp_i, shape_i))
                j += 1
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    return out


def _fallback(name, func, args, kwargs, gts):
    """Gather every input to B, run on whole tensors, re-shard like the first input."""
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
    out = _run(name, func, args, kwargs, targets, [allb], [None])
    return _reshard_like(out, first)


def _reshard_like(out, first):
    from .global_tensor import GlobalSpec, make_global, to_global

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


def _with(sbp_tuple, k, value):
    t = list(sbp_tuple)
    t[k] = value
    return tuple(t)


# ----------------------------------------------------------------------------- creation
def _create(name, func, args, kwargs):
    from .global_tensor import GlobalSpec, make_global

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
    from .boxing import box_array

    local = box_array(full.array, placement, full.array.shape, (broadcast,) * placement.ndim, sbp, name)
    t = Tensor(local.copy() if local is full.array else local, requires_grad=requires_grad)
    return make_global(t, GlobalSpec(placement, sbp, full.array.shape))


def _as_tuple(sbp, placement):
    from .sbp import as_sbp_tuple

    return as_sbp_tuple(sbp, placement.ndim)


@rule("zeros_like", "ones_like", "empty_like", "full_like")
def _like_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    sbp = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
    if sbp != spec.sbp:
        return NotImplemented
    rest = {k: v for k, v in kwargs.items()}
    local = func(_wrap_local(t), *args[1:], **rest)
    return _mark(local, spec.placement, [sbp], [spec.shape])


@rule("rand_like", "randn_like", "randint_like")
def _random_like_rule(name, func, args, kwargs):
    # Draw the whole logical tensor (same values as one process), keep this rank's shard.
    t = args[0]
    spec = t._spec
    # The template has the shard's array module, so the draw lands on the shard's device.
    template = get_array_module(t.array).empty(spec.shape, dtype=t.array.dtype)
    full = func(_wrap_local_array(template), *args[1:], **kwargs)
    from .boxing import box_array
    from .global_tensor import GlobalSpec, make_global

    sbp = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
    local = box_array(full.array, spec.placement, spec.shape, (broadcast,) * len(sbp), sbp, name)
    out = Tensor(local)
    return make_global(out, GlobalSpec(spec.placement, sbp, spec.shape))


def _wrap_local(t):
    return _wrap_local_array(t.array)


def _wrap_local_array(array):
    from ..autograd import _wrap

    return _wrap(array)


# ----------------------------------------------------------------------------- elementwise
_EW_MODULES = ("shardflow.ops.elementwise", "shardflow.ops.elementwise_extra", "shardflow.ops.arithmetic")
_NOT_EW = {"allclose", "equal", "isclose", "where"}


def _elementwise_names():
    names = set()
    for n, f in _dispatch.OPS.items():
        mod = getattr(getattr(f, "__wrapped__", f), "__module__", "")
        if mod in _EW_MODULES and n not in _NOT_EW:
            names.add(n)
    return names


class _LazyNames:
    def __init__(self, build):
        self._build = build
        self._names = None

    def __contains__(self, item):
        if self._names is None:
            self._names = self._build()
        return item in self._names


ELEMENTWISE = _LazyNames(_elementwise_names)
_ADD_LIKE = {"add", "sub", "subtract"}
_MUL_LIKE = {"mul", "multiply"}
_DIV_LIKE = {"div", "divide", "true_divide"}
_LINEAR_UNARY = {"neg", "negative", "clone", "contiguous", "_to_dtype", "detach"}


def _bshape(shapes):
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(nd):
        size = 1
        for s in shapes:
            j = i - (nd - len(s))
            if j >= 0 and s[j] != 1:
                size = s[j]
        out.append(size)
    return tuple(out)


def _ew_plan(name, tensors, out_shape, n_scalars, mesh_nd):
    """Targets (per tensor) and the output sbp of an elementwise op."""
    out_nd = len(out_shape)
    targets = [list(t._spec.sbp) for t in tensors]
    out = []
    for k in range(mesh_nd):
        sbps = [t._spec.sbp[k] for t in tensors]
        splits = [(i, s) for i, s in enumerate(sbps) if s.is_split()]
        chosen = None
        for i, s in splits:
            od = s.dim + out_nd - len(tensors[i]._spec.shape)
            if out_shape[od] > 1 or tensors[i]._spec.shape[s.dim] == out_shape[od]:
                chosen = Split(od, s.blocks)
                break
        if chosen is not None:
            for i, t in enumerate(tensors):
                shp = t._spec.shape
                d = chosen.dim - (out_nd - len(shp))
                if d >= 0 and shp[d] == out_shape[chosen.dim] and shp[d] != 1:
                    targets[i][k] = Split(d, chosen.blocks)
                else:
                    targets[i][k] = broadcast
            out.append(chosen)
            continue
        partial = [i for i, s in enumerate(sbps) if s.is_partial()]
        if partial:
            ops = {sbps[i].op for i in partial}
            ok_sum = ops == {"sum"}
            if ok_sum and name in _ADD_LIKE and n_scalars == 0:
                for i in range(len(tensors)):
                    targets[i][k] = partial_sum
                out.append(partial_sum)
                continue
            if ok_sum and (name in _MUL_LIKE and len(partial) == 1) or (
                ok_sum and name in _DIV_LIKE and partial == [0]
            ) or (name in _LINEAR_UNARY and len(tensors) == 1):
                out.append(sbps[partial[0]] if name in _LINEAR_UNARY else partial_sum)
                continue
            for i in partial:
                targets[i][k] = broadcast
        out.append(broadcast)
    return [tuple(t) for t in targets], tuple(out)


def _elementwise_rule(name, func, args, kwargs):
    tensors = _globals(args, kwargs)
    uniq = list({id(t): t for t in tensors}.values())
    out_shape = _bshape([t._spec.shape for t in uniq])
    n_scalars = sum(1 for a in list(args) + list(kwargs.values())
                    if isinstance(a, int | float) and not isinstance(a, bool)) if name in _ADD_LIKE else 0
    if name in _ADD_LIKE and "alpha" in kwargs:
        n_scalars -= 1  # alpha scales, it is not an operand
    mesh_nd = uniq[0]._spec.placement.ndim
    tg, out_sbp = _ew_plan(name, uniq, out_shape, n_scalars, mesh_nd)
    targets = {id(t): s for t, s in zip(uniq, tg)}
    return _run(name, func, args, kwargs, targets, [out_sbp], [out_shape])


def _inplace_rule(name, func, args, kwargs):
    """``x.add_(y)`` on a global x: the out-of-place rule, then x takes the result."""
    base = name[:-1]
    self = args[0]
    if not isinstance(self, Tensor) or self._spec is None:
        return NotImplemented
    out = _dispatch.OPS[base](*args, **kwargs)
    if out._spec.sbp != self._spec.sbp:
        from .global_tensor import to_global

        out = to_global(out, sbp=self._spec.sbp)
    if tuple(out._spec.shape) != tuple(self._spec.shape):
        raise RuntimeError(
            f"{name}: the result's shape {out._spec.shape} differs from the tensor's "
            f"{self._spec.shape}"
        )
    spec = self._spec
    self._spec = None
    res_spec = out._spec
    out._spec = None
    try:
        self._inplace(out)
    finally:
        self._spec = spec
        out._spec = res_spec
    return self


@rule("where")
def _where_rule(name, func, args, kwargs):
    if len(args) != 3 or kwargs:
        return NotImplemented
    return _elementwise_rule(name, func, args, kwargs)


@rule("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout_rule(name, func, args, kwargs):
    p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
    training = args[2] if len(args) > 2 else kwargs.get("training", True)
    if p == 0 or not training:
        t = args[0]
        return _run(name, func, args, kwargs, {}, [t._spec.sbp], [t._spec.shape])
    return NotImplemented  # a mask that matches one process needs the whole tensor


# ----------------------------------------------------------------------------- reductions
def _reduce_dims(dim, nd):
    if dim is None or dim == () or dim == []:
        return tuple(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % nd if nd else 0 for d in dim))


@rule("sum", "mean", "amax", "amin")
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

    return _run(name, fn, args, kwargs, {id(t): tuple(target)}, [tuple(out)], [out_shape])


# ----------------------------------------------------------------------------- matmul
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


@rule("matmul", "mm", "bmm")
def _matmul_rule(name, func, args, kwargs):
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = args
    if a._spec is None or b._spec is None:
        return NotImplemented
    sa, sb = a._spec, b._spec
    if len(sa.shape) < 2 or len(sb.shape) < 2:
        return NotImplemented
    batch = _bshape([sa.shape[:-2], sb.shape[:-2]])
    out_shape = (*batch, sa.shape[-2], sb.shape[-1])
    ta, tb, out = _mm_plan(sa, sb, len(sa.shape), len(sb.shape), len(out_shape))
    targets = {id(a): ta} if a is b else {id(a): ta, id(b): tb}
    if a is b and ta != tb:
        return NotImplemented
    return _run(name, func, args, kwargs, targets, [out], [out_shape])


@rule("linear")
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
    from .global_tensor import GlobalSpec

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
        return _run(name, func, (x, w), {}, targets, [out], [out_shape])
    # The bias joins like an elementwise add: exact on Partial, sliced on a column split.
    y = _run(name, func, (x, w), {}, targets, [out], [out_shape])
    return _dispatch.OPS["add"](y, bias)


# ----------------------------------------------------------------------------- shape ops
@rule("transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis")
def _permute_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    nd = len(spec.shape)
    if name in ("transpose", "swapaxes", "swapdims"):
        d0 = args[1] if len(args) > 1 else kwargs["dim0"]
        d1 = args[2] if len(args) > 2 else kwargs["dim1"]
        perm = list(range(nd))
        d0, d1 = d0 % nd, d1 % nd
        perm[d0], perm[d1] = perm[d1], perm[d0]
    elif name == "t":
        perm = list(range(nd))[::-1]
    elif name == "permute":
        dims = args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kwargs["dims"])
        if isinstance(dims, int):
            dims = (dims,)
        perm = [d % nd for d in dims]
    else:
        return NotImplemented
    inv = {p: i for i, p in enumerate(perm)}
    out = tuple(Split(inv[s.dim], s.blocks) if s.is_split() else s for s in spec.sbp)
    out_shape = tuple(spec.shape[p] for p in perm)
    return _run(name, func, args, kwargs, {}, [out], [out_shape])


@rule("contiguous", "clone", "_to_dtype", "_to_device", "detach")
def _identity_layout_rule(name, func, args, kwargs):
    t = args[0]
    return _run(name, func, args, kwargs, {}, [t._spec.sbp], [t._spec.shape])


def _resolve_shape(shape, numel):
    shape = list(shape)
    if -1 in shape:
        i = shape.index(-1)
        rest = math.prod(s for j, s in enumerate(shape) if j != i)
        shape[i] = numel // rest if rest else 0
    return tuple(shape)


def _view_groups(a, b):
    """Pairs of dim ranges (ia, ib) with equal products: how a reshape regroups dims."""
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        si, sj = [i], [j]
        pa = a[i] if i < len(a) else 1
        pb = b[j] if j < len(b) else 1
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                si.append(i)
                i += 1
            elif j < len(b):
                pb *= b[j]
                sj.append(j)
                j += 1
            else:
                break
        groups.append(([x for x in si if x < len(a)], [x for x in sj if x < len(b)]))
    return groups


def _view_sbp(spec, new_shape):
    """Output sbp of a view of ``spec`` to ``new_shape``, or None if a split cannot stay."""
    groups = _view_groups(spec.shape, new_shape)
    out = []
    for k, s in enumerate(spec.sbp):
        if not s.is_split():
            out.append(s)
            continue
        n = spec.placement.shape[k]
        for ga, gb in groups:
            if s.dim in ga:
                # size-1 dims do not matter; the split dim must lead its group, on both sides
                ga_real = [d for d in ga if spec.shape[d] != 1]
                gb_real = [d for d in gb if new_shape[d] != 1]
                if not ga_real or ga_real[0] != s.dim or not gb_real:
                    return None
                od = gb_real[0]
                la, lb = spec.shape[s.dim], new_shape[od]
                if la == lb and len(ga_real) == 1 and len(gb_real) == 1:
                    out.append(Split(od, s.blocks))
                elif la % (n * s.blocks) == 0 and lb % (n * s.blocks) == 0 and (
                    s.blocks == 1 or la == lb
                ):
                    out.append(Split(od, s.blocks))
                else:
                    return None
                break
        else:
            return None
    # Two mesh dims splitting one tensor dim: keep it only when the dim passes unchanged.
    return tuple(out)


def _view_like(name, func, t, new_shape, args, kwargs, rebuild):
    spec = t._spec
    out_sbp = _view_sbp(spec, new_shape)  # a view is linear: Partial passes through
    if out_sbp is None:
        return NotImplemented
    from .global_tensor import GlobalSpec

    out_spec = GlobalSpec(spec.placement, out_sbp, new_shape)
    local_shape = out_spec.local_shape()

    def local_args(largs, lkw):
        return rebuild(largs, lkw, local_shape)

    return _run(name, func, args, kwargs, {}, [out_sbp], [new_shape], local_args)


@rule("view", "reshape")
def _view_rule(name, func, args, kwargs):
    t = args[0]
    shape = args[1:] if len(args) > 1 else (kwargs.get("shape"),)
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    if any(isinstance(s, Tensor) for s in shape):
        return NotImplemented
    new_shape = _resolve_shape(shape, math.prod(t._spec.shape))

    def rebuild(largs, lkw, local_shape):
        return [largs[0], tuple(local_shape)], {}

    return _view_like(name, func, t, new_shape, args, kwargs, rebuild)


@rule("flatten", "unsqueeze", "squeeze", "unflatten", "ravel")
def _reshape_family_rule(name, func, args, kwargs):
    t = args[0]
    shape = t._spec.shape
    nd = len(shape)
    if name == "flatten":
        s0 = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
        s1 = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
        if nd == 0:
            new = (1,)
        else:
            s0, s1 = s0 % nd, s1 % nd
            new = (*shape[:s0], math.prod(shape[s0:s1 + 1]), *shape[s1 + 1:])
    elif name == "ravel":
        new = (math.prod(shape),)
    elif name == "unsqueeze":
        d = args[1] if len(args) > 1 else kwargs["dim"]
        d = d % (nd + 1)
        new = (*shape[:d], 1, *shape[d:])
    elif name == "squeeze":
        d = args[1] if len(args) > 1 else kwargs.get("dim", None)
        if d is None:
            new = tuple(s for s in shape if s != 1)
        else:
            ds = {x % nd for x in ((d,) if isinstance(d, int) else d)} if nd else set()
            new = tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1))
    else:
        d = args[1] % nd
        sizes = tuple(args[2])
        new = (*shape[:d], *_resolve_shape(sizes, shape[d]), *shape[d + 1:])
    reshape = _dispatch.OPS["reshape"].__wrapped__

    def rebuild(largs, lkw, local_shape):
        return [largs[0], tuple(local_shape)], {}

    return _view_like(name, lambda x, s: reshape(x, s), t, new, args, kwargs, rebuild)


@rule("expand", "expand_as", "broadcast_to")
def _expand_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    if name == "expand_as":
        new = tuple(args[1].shape)
    else:
        sizes = args[1:] if len(args) > 1 else (kwargs.get("size"),)
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        nd_new = len(sizes)
        off = nd_new - len(spec.shape)
        new = tuple(spec.shape[i - off] if (s == -1) else s for i, s in enumerate(sizes))
    off = len(new) - len(spec.shape)
    out = []
    for s in spec.sbp:
        if s.is_partial():
            return NotImplemented
        out.append(Split(s.dim + off, s.blocks) if s.is_split() else s)
    from .global_tensor import GlobalSpec

    local_new = GlobalSpec(spec.placement, out, new).local_shape()
    expand = _dispatch.OPS["expand"].__wrapped__
    if name == "expand_as" and args[1]._spec is not None:
        args = (t,)

    def local_args(largs, lkw):
        return [largs[0], tuple(local_new)], {}

    return _run(name, lambda x, s: expand(x, s), args[:1], {}, {}, [tuple(out)], [new], local_args)


@rule("split", "chunk")
def _split_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    nd = len(spec.shape)
    arg = args[1] if len(args) > 1 else kwargs.get("split_size_or_sections", kwargs.get("chunks"))
    dim = (args[2] if len(args) > 2 else kwargs.get("dim", 0)) % nd
    size = spec.shape[dim]
    if name == "chunk":
        c = -(-size // arg)
        sizes = [min(c, size - i * c) for i in range(arg) if i * c < size]
    elif isinstance(arg, int):
        sizes = [min(arg, size - i) for i in range(0, size, arg)]
    else:
        sizes = list(arg)
    splitters = [(k, s) for k, s in enumerate(spec.sbp) if s.is_split() and s.dim == dim]
    if not splitters:
        shapes = [tuple(sz if d == dim else spec.shape[d] for d in range(nd)) for sz in sizes]
        return _run(name, func, args, kwargs, {}, [spec.sbp] * len(sizes), shapes)
    if len(splitters) == 1 and splitters[0][1].blocks == len(sizes) and len(set(sizes)) == 1:
        k, s = splitters[0]
        out = _with(spec.sbp, k, Split(dim))
        shapes = [tuple(sizes[0] if d == dim else spec.shape[d] for d in range(nd))] * len(sizes)
        # Locally: this rank's shard holds its chunk of every block, in block order.
        local_piece = t.array.shape[dim] // len(sizes)
        split_fn = _dispatch.OPS["split"].__wrapped__

        def local_args(largs, lkw):
            return [largs[0], local_piece, dim], {}

        return _run(name, lambda x, a, d: split_fn(x, a, d), args, kwargs, {}, [out] * len(sizes),
                    shapes, local_args)
    return NotImplemented


@rule("cat", "concat", "concatenate", "stack")
def _cat_rule(name, func, args, kwargs):
    tensors = list(args[0])
    if any(not isinstance(x, Tensor) or x._spec is None for x in tensors):
        return NotImplemented
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    spec = tensors[0]._spec
    nd = len(spec.shape)
    if any(s.is_partial() for s in spec.sbp):
        return NotImplemented
    if name == "stack":  # a new dim: splits move past it, nothing is gathered
        dim = dim % (nd + 1)
        src = spec.sbp
        out = tuple(Split(s.dim + (s.dim >= dim), s.blocks) if s.is_split() else s for s in spec.sbp)
        shape = (*spec.shape[:dim], len(tensors), *spec.shape[dim:])
    else:  # concatenating along a split dim gathers it first
        dim = dim % nd
        src = out = tuple(broadcast if (s.is_split() and s.dim == dim) else s for s in spec.sbp)
        shape = tuple(sum(x._spec.shape[dim] for x in tensors) if d == dim else spec.shape[d] for d in range(nd))
    targets = {id(x): src for x in tensors}
    return _run(name, func, args, kwargs, targets, [out], [shape])


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


@rule("getitem")
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
                from .global_tensor import to_global

                return _dispatch.OPS["getitem"](to_global(t, sbp=target), index)
            out_dim_of[d] = od
            shape.append(n)
            od += 1
        else:
            if d in split_dims:
                target = tuple(broadcast if (s.is_split() and s.dim == d) else s for s in spec.sbp)
                from .global_tensor import to_global

                return _dispatch.OPS["getitem"](to_global(t, sbp=target), index)
    out = tuple(Split(out_dim_of[s.dim], s.blocks) if s.is_split() else s for s in spec.sbp)
    return _run(name, func, args, kwargs, {}, [out], [tuple(shape)])


# ----------------------------------------------------------------------------- nn ops
@rule("embedding")
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

    return _run(name, fn, args, kwargs, {id(idx): tuple(ti), id(w): tuple(tw)}, [tuple(out)], [shape])


def _keep_unless(spec, dims):
    """Target sbp: splits on ``dims`` and partials become B; output the same."""
    tgt = tuple(broadcast if (s.is_partial() or (s.is_split() and s.dim in dims)) else s for s in spec.sbp)
    return tgt


@rule("softmax", "log_softmax")
def _softmax_rule(name, func, args, kwargs):
    t = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        return NotImplemented
    nd = len(t._spec.shape)
    tgt = _keep_unless(t._spec, {dim % nd})
    return _run(name, func, args, kwargs, {id(t): tgt}, [tgt], [t._spec.shape])


@rule("layer_norm", "rms_norm")
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
    return _run(name, func, args, kwargs, targets, [tgt], [x._spec.shape])


@rule("scaled_dot_product_attention")
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
    return _run(name, func, args, kwargs, targets, [tgt], [shape])


@rule("cross_entropy")
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
        from .boxing import _all_reduce

        placement = sx.placement

        def fn(x_local, t_local, **kw):
            kw = dict(kw, reduction="sum")
            loss = func(x_local, t_local, **kw)
            # Counted with the target's array module (a 0-d device array stays on the device).
            xp = get_array_module(t_local.array)
            valid = xp.array((t_local.array != ignore_index).sum(), dtype=xp.float64)
            for k in split_dims:
                valid = _all_reduce(valid, placement, k, name, "forward")
            return loss / float(valid)

    return _run(name, fn, args, kwargs, {id(x): tuple(tx), id(target): tuple(tt)}, [tuple(out)], [shape])


@rule("conv2d", "conv1d", "conv3d")
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
    res = _run(name, func, args, kwargs, targets, [tuple(out)], [None])
    spatial = res.array.shape[2:]
    res._spec.shape = (sx.shape[0], sw.shape[0], *spatial)
    return res


def _vocab_parallel_cross_entropy(x, target, k, reduction, ignore_index):
    """Cross-entropy of logits split on the class dim (mesh dim ``k``) without gathering them
    (Megatron's parallel cross-entropy; PyTorch's ``loss_parallel``). Written in global ops:
    the row max (no gradient) and the sum of exponentials are all-reduced, ``(N,)`` each; the
    target's logit is picked by the rank that owns it and stays Partial until the loss is
    summed. Backward needs no collective: the gradient reaches each logit shard locally."""
    from .global_tensor import GlobalSpec, make_global

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
    from .global_tensor import to_local

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
    from .global_tensor import to_global

    sbp = tuple(broadcast if j == k else s for j, s in enumerate(t._spec.sbp))
    return to_global(t, sbp=sbp)
