"""Running an op on shards: the plumbing every sbp rule shares.

A rule decides *targets* (the sbp each global input must have) and the outputs' sbp and
logical shapes; :func:`run_on_shards` then

1. boxes each global input whose sbp differs from its target (``boxing.Boxing``: the
   collectives, recorded by ``comm_plan()``),
2. wraps an input that requires grad and is B on a mesh dimension where an output is not B
   in ``boxing.BroadcastUse`` (its local gradient there is partial: the backward
   all-reduces it — Megatron's ``f``, data parallel's gradient all-reduce; a parameter whose
   data-parallel reduction a gradient reducer does is wrapped in
   ``boxing.DeferredReduction`` for that mesh dimension instead: ``boxing.data_parallel_use``),
3. calls the plain op on the local shards (global inputs passed through unchanged are
   stripped of their spec for the call, so the op sees local tensors),
4. marks each output global with its (sbp, shape) (:func:`mark_outputs`).
"""

from __future__ import annotations

from ...autograd import Tensor
from .. import layout
from ..boxing import Boxing, BroadcastUse, data_parallel_use
from ..spec import GlobalSpec, make_global

__all__ = [
    "global_tensors_in", "local_tensors_in", "run_on_shards", "mark_outputs", "broadcast_shape",
]


def global_tensors_in(args, kwargs) -> list[Tensor]:
    """The global tensors among the arguments (top level and inside lists/tuples)."""
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


def local_tensors_in(args, kwargs) -> list[Tensor]:
    """The local tensors among the arguments (top level and inside lists/tuples)."""
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and a._spec is None:
            out.append(a)
        elif isinstance(a, list | tuple):
            out.extend(x for x in a if isinstance(x, Tensor) and x._spec is None)
    return out


def run_on_shards(name, func, args, kwargs, targets, out_sbps, out_shapes, local_args=None):
    """Box inputs to ``targets`` (id -> sbp tuple), wrap B inputs whose gradient will be
    partial, run ``func`` on shards and give each output its (sbp, shape).

    ``local_args(largs, lkw) -> (largs, lkw)`` may rewrite the arguments of the local call
    where they depend on the local shape (e.g. a view's size).
    """
    prepared = {}
    stripped = []
    mesh_nd = None
    out_nonb = None
    for t in global_tensors_in(args, kwargs):
        if id(t) in prepared:
            continue
        spec = t._spec
        if mesh_nd is None:
            mesh_nd = spec.placement.ndim
            out_nonb = [k for k in range(mesh_nd) if any(not s[k].is_broadcast() for s in out_sbps)]
        tgt = targets.get(id(t), spec.sbp)
        mesh = spec.placement.shape
        cur, wrap = t, []
        if t.requires_grad:
            wrap = [k for k in out_nonb if tgt[k].is_broadcast() and mesh[k] > 1]
            # a parameter whose data-parallel gradient a reducer's buckets reduce
            cur, wrap = data_parallel_use(t, spec.placement, wrap)
        if tuple(tgt) != spec.sbp:
            layout.validate(spec.shape, spec.placement.shape, tgt, name)
            cur = Boxing.apply(cur, spec.placement, spec.shape, spec.sbp, tuple(tgt), name)
        if wrap:
            cur = BroadcastUse.apply(cur, spec.placement, tuple(wrap), name)
        if cur is t:
            stripped.append((t, spec))
        prepared[id(t)] = cur
    placement = next(iter(global_tensors_in(args, kwargs)))._spec.placement
    largs = [_substitute(a, prepared) for a in args]
    lkw = {k: _substitute(v, prepared) for k, v in kwargs.items()}
    if local_args is not None:
        largs, lkw = local_args(largs, lkw)
    for t, _ in stripped:
        t._spec = None
    try:
        out = func(*largs, **lkw)
    finally:
        for t, spec in stripped:
            t._spec = spec
    return mark_outputs(out, placement, out_sbps, out_shapes, stripped)


def _substitute(a, prepared):
    """``a`` with each global tensor replaced by its prepared (boxed/wrapped) form, inside
    lists and tuples too. A module-level function, not a closure over ``prepared``: a
    recursive closure refers to itself through its cell, a reference cycle that kept every
    op's boxed inputs (``prepared``) alive until Python's cyclic collector ran (on the
    global-tensor path, ~20% more activation memory at the peak)."""
    if isinstance(a, Tensor) and a._spec is not None:
        return prepared[id(a)]
    if isinstance(a, list | tuple) and any(isinstance(x, Tensor) and x._spec is not None for x in a):
        return type(a)(_substitute(x, prepared) for x in a) if not hasattr(a, "_fields") else a
    return a


def mark_outputs(out, placement, out_sbps, out_shapes, stripped=()):
    """Make each tensor output global with its (sbp, shape); a shape of None is the shard's.
    An output that is one of the ``stripped`` inputs (the op returned its input) is left."""
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


def broadcast_shape(shapes):
    """The broadcast of ``shapes`` (NumPy's rule)."""
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
