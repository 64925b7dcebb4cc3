"""Boxing: changing a global tensor's sbp, lowered to collectives on the mesh's groups.

Per mesh dimension (its communicator of ``n`` ranks, this rank at index ``i``):

=============  ==============================================================
P -> B         all_reduce (sum, or max for partial_max)
P -> S(d)      reduce_scatter (even splits); all_reduce + local slice otherwise
S(d) -> B      all_gather (uneven chunks padded to the largest, then trimmed)
B -> S(d)      local slice, no communication
S(i) -> S(j)   all_to_all (even splits); all_gather + local slice otherwise
B -> P         zero on every rank but index 0 (for partial_sum; max keeps all)
S -> P         S -> B -> P
=============  ==============================================================

Several mesh dimensions: when only one changes and no other mesh dimension splits the same
tensor dimension, that one step runs. Otherwise the tensor goes up to B on the changed
dimensions, last mesh dimension first (undoing nested splits from the inside), then down
to the target, first mesh dimension first — correct for every pair, sometimes more bytes.

Autograd: :class:`Boxing` is a Function. Its backward is the dual boxing, from the
canonical gradient layout of the target to that of the source (``sbp.grad_sbp``: S stays
S, B and P become B), e.g. P->B (all_reduce) has backward B->B (nothing), B->S (slice) has
backward S->B (all_gather). :class:`BroadcastUse` is the other half of the gradient
convention: a B input consumed by a computation whose output is not B on some mesh
dimension receives only a partial gradient there, so its backward all-reduces it (this is
Megatron's ``f`` and data parallel's gradient all-reduce).

Data parallel through a gradient reducer: when a reducer's buckets reduce a global
parameter's gradient over a mesh dimension (``DistributedDataParallel(device_mesh=...)``
over a model laid out as global tensors; ``nn/parallel/reducer.py``), :func:`data_parallel_use`
takes that dimension out of the parameter's per-use all-reduces and wraps the use in
:class:`DeferredReduction`, whose backward leaves the gradient a partial sum there; the
parameter's accumulated gradient is then all-reduced once, in its bucket, with the other
parameters' (recorded by ``comm_plan()`` as ``data_parallel_bucket``).
"""

from __future__ import annotations

import weakref

from ..autograd import Function
from ..backend.xp import get_array_module
from ..nn.parallel.reducer import deferred_reduction
from . import layout, plan
from .sbp import Partial, broadcast, grad_sbp

__all__ = ["box_array", "all_reduce_on", "Boxing", "BroadcastUse", "DeferredReduction",
           "data_parallel_use"]


def _group(placement, k):
    return placement.group(k)


def all_reduce_on(arr, placement, k, op_name, phase, reduce="sum"):
    """A copy of ``arr`` all-reduced over mesh dimension ``k`` (recorded in ``comm_plan()``)."""
    g = _group(placement, k)
    # The data's own array module: a device shard stays on the device (NCCL reduces it there).
    out = get_array_module(arr).array(arr, copy=True, order="C")
    plan.record(phase, op_name, "all_reduce", out.nbytes, k, g.size)
    if g.size > 1:
        g.all_reduce(out, op=reduce)
    return out


def _move_front(xp, arr, d):
    return xp.moveaxis(arr, d, 0)


def _all_gather_dim(arr, placement, k, d, size, blocks, op_name, phase):
    """Undo the split of tensor dim ``d`` (size ``size`` at this level) over mesh dim ``k``."""
    g = _group(placement, k)
    n = g.size
    lens = [layout.piece_len(size, n, r, blocks) for r in range(n)]
    cmax = max(lens)
    xp = get_array_module(arr)
    x = _move_front(xp, arr, d)
    padded = xp.zeros((cmax, *x.shape[1:]), dtype=arr.dtype)
    padded[: x.shape[0]] = x
    plan.record(phase, op_name, "all_gather", padded.nbytes, k, n)
    gathered = g.all_gather(padded) if n > 1 else padded[None]
    out = xp.empty((size, *x.shape[1:]), dtype=arr.dtype)
    for r in range(n):
        out[layout.piece(size, n, r, blocks)] = gathered[r][: lens[r]]
    return xp.ascontiguousarray(xp.moveaxis(out, 0, d))


def _slice_dim(arr, placement, k, d, size, blocks):
    g_index = placement.index(k)
    n = placement.shape[k]
    sel = layout.piece(size, n, g_index, blocks)
    idx = (slice(None),) * d + (sel,)
    return get_array_module(arr).ascontiguousarray(arr[idx])


def _reduce_scatter_dim(arr, placement, k, d, op_name, phase):
    g = _group(placement, k)
    xp = get_array_module(arr)
    x = xp.ascontiguousarray(_move_front(xp, arr, d))
    plan.record(phase, op_name, "reduce_scatter", x.nbytes, k, g.size)
    out = g.reduce_scatter(x) if g.size > 1 else x
    return xp.ascontiguousarray(xp.moveaxis(out, 0, d))


def _all_to_all_dims(arr, placement, k, i, j, op_name, phase):
    """S(i) -> S(j) on mesh dim k for even splits: split dim j into n blocks, exchange,
    concatenate the received blocks along dim i."""
    g = _group(placement, k)
    n = g.size
    xp = get_array_module(arr)
    x = xp.moveaxis(arr, j, 0)  # (Lj, ...)
    lj = x.shape[0] // n
    blocks = xp.ascontiguousarray(x.reshape(n, lj, *x.shape[1:]))
    plan.record(phase, op_name, "all_to_all", blocks.nbytes, k, n)
    recv = g.all_to_all(blocks) if n > 1 else blocks  # (n, lj, ...): block r came from rank r
    recv = xp.moveaxis(recv, 1, j + 1)  # (n, ... with dim j of size lj ...)
    return xp.ascontiguousarray(xp.concatenate(list(recv), axis=i))


def box_array(arr, placement, shape, src, dst, op_name="to_global", phase="forward"):
    """Turn this rank's shard ``arr`` of a tensor of logical ``shape`` from ``src`` to ``dst``."""
    if tuple(src) == tuple(dst):
        return arr
    mesh, coord = placement.shape, placement.coordinate
    nd = len(mesh)
    # A mesh dimension of one rank holds the whole tensor whatever its sbp: nothing to do.
    changed = [k for k in range(nd) if src[k] != dst[k] and mesh[k] > 1]
    if not changed:
        return arr

    # One changed mesh dim whose tensor dims no other mesh dim splits: a direct step.
    if len(changed) == 1:
        k = changed[0]
        s, t = src[k], dst[k]
        dims = {x.dim for x in (s, t) if x.is_split()}
        others = {src[m].dim for m in range(nd) if m != k and src[m].is_split()}
        if not dims & others:
            out = _direct(arr, placement, shape, src, k, s, t, op_name, phase)
            if out is not None:
                return out

    # General route: up to B on the changed dims (inner first), then down to dst.
    up = set(changed)
    for k in sorted(changed):
        for x in (src[k], dst[k]):
            if x.is_split():
                up.update(m for m in range(k + 1, nd) if src[m].is_split() and src[m].dim == x.dim)
    cur = list(src)
    for k in sorted(up, reverse=True):
        arr = _to_broadcast(arr, placement, shape, cur, k, op_name, phase)
        cur[k] = broadcast
    for k in sorted(up):
        t = dst[k]
        if t.is_split():
            size = layout.level_size(shape, mesh, coord, cur, t.dim, k)
            arr = _slice_dim(arr, placement, k, t.dim, size, t.blocks)
        elif t.is_partial():
            arr = _broadcast_to_partial(arr, placement, k, t)
        cur[k] = t
    return arr


def _to_broadcast(arr, placement, shape, cur, k, op_name, phase):
    s = cur[k]
    if s.is_partial():
        return all_reduce_on(arr, placement, k, op_name, phase, reduce=s.op)
    if s.is_split():
        size = layout.level_size(shape, placement.shape, placement.coordinate, cur, s.dim, k)
        return _all_gather_dim(arr, placement, k, s.dim, size, s.blocks, op_name, phase)
    return arr


def _broadcast_to_partial(arr, placement, k, t: Partial):
    if t.op == "max" or placement.index(k) == 0:
        return arr
    return get_array_module(arr).zeros_like(arr)


def _direct(arr, placement, shape, src, k, s, t, op_name, phase):
    mesh, coord = placement.shape, placement.coordinate
    n = mesh[k]
    if s.is_broadcast():
        if t.is_split():
            size = layout.level_size(shape, mesh, coord, src, t.dim, k)
            return _slice_dim(arr, placement, k, t.dim, size, t.blocks)
        return _broadcast_to_partial(arr, placement, k, t)
    if s.is_partial():
        if t.is_broadcast():
            return all_reduce_on(arr, placement, k, op_name, phase, reduce=s.op)
        if t.is_split() and s.op == "sum":
            size = layout.level_size(shape, mesh, coord, src, t.dim, k)
            if t.blocks == 1 and size % n == 0:
                return _reduce_scatter_dim(arr, placement, k, t.dim, op_name, phase)
            full = all_reduce_on(arr, placement, k, op_name, phase)
            return _slice_dim(full, placement, k, t.dim, size, t.blocks)
        return None
    # s is a split
    if t.is_split():
        si = layout.level_size(shape, mesh, coord, src, s.dim, k)
        tj = layout.level_size(shape, mesh, coord, src, t.dim, k)
        if s.blocks == t.blocks == 1 and s.dim != t.dim and si % n == 0 and tj % n == 0:
            return _all_to_all_dims(arr, placement, k, s.dim, t.dim, op_name, phase)
        return None
    if t.is_broadcast():
        size = layout.level_size(shape, mesh, coord, src, s.dim, k)
        return _all_gather_dim(arr, placement, k, s.dim, size, s.blocks, op_name, phase)
    return None  # S -> P: the general route (via B)


class Boxing(Function):
    """Differentiable sbp change of one global tensor (see the module docstring)."""

    save_inputs = ()

    def forward(self, x, placement, shape, src, dst, op_name):
        self.args = (placement, shape, src, dst, op_name)
        return box_array(x, placement, shape, src, dst, op_name, "forward")

    def backward(self, g):
        placement, shape, src, dst, op_name = self.args
        gsrc = tuple(grad_sbp(s) for s in dst)
        gdst = tuple(grad_sbp(s) for s in src)
        return box_array(g, placement, shape, gsrc, gdst, op_name, "backward"), None, None, None, None, None


class BroadcastUse(Function):
    """Identity forward; backward all-reduces the (partial) gradient over ``mesh_dims``."""

    save_inputs = ()

    def forward(self, x, placement, mesh_dims, op_name):
        self.args = (placement, mesh_dims, op_name)
        return x

    def backward(self, g):
        placement, mesh_dims, op_name = self.args
        for k in mesh_dims:
            g = all_reduce_on(g, placement, k, op_name, "backward")
        return g, None, None, None


class DeferredReduction(Function):
    """A use of a global parameter whose data-parallel reduction over mesh dimension ``k`` a
    gradient reducer's buckets do. Identity forward. Backward leaves this use's gradient a
    partial sum over ``k`` (what the bucket's all_reduce(SUM) completes): a partial gradient
    (``partial``: the op's output is not B on ``k``) passes unchanged; a whole one (the output
    is B on ``k``, or the parameter was boxed away from B there) is kept on index 0 of ``k``
    and zero on the others (B -> P), so the sum counts it once."""

    save_inputs = ()

    def forward(self, x, placement, k, partial):
        self.args = (placement, k, partial)
        return x

    def backward(self, g):
        placement, k, partial = self.args
        if not partial and placement.index(k) != 0:
            g = get_array_module(g).zeros_like(g)
        return g, None, None, None


_RECORDING: weakref.WeakSet = weakref.WeakSet()  # reducers whose launches comm_plan() records


def data_parallel_use(t, placement, wrap):
    """``(tensor to use, mesh dims to all-reduce per use)`` for the global input ``t`` of an
    op whose B-input gradients are partial on the mesh dims ``wrap``. When a gradient reducer
    reduces ``t``'s gradient over a mesh dimension (``reducer.deferred_reduction``), ``t`` is
    wrapped in :class:`DeferredReduction` and that dimension leaves ``wrap``; otherwise
    ``(t, wrap)`` unchanged."""
    found = deferred_reduction(t)
    if found is None:
        return t, wrap
    reducer, k = found
    group = placement.group(k)
    if group is not reducer.process_group:  # laid out again since the reducer was made
        return t, wrap
    if reducer not in _RECORDING:
        _RECORDING.add(reducer)
        reducer.register_launch_hook(
            lambda b, k=k, n=group.size: plan.record("backward", "data_parallel_bucket",
                                                     "all_reduce", b.flat.nbytes, k, n))
    return DeferredReduction.apply(t, placement, k, k in wrap), [d for d in wrap if d != k]
