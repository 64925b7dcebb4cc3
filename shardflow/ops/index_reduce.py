"""Indexed writes and segment reductions with PyTorch's names: ``put`` (+ ``put_``),
``index_reduce`` (+ ``index_reduce_``), ``segment_reduce``, ``nonzero_static``.

All are built on ``scatter`` / ``scatter_add`` / ``scatter_reduce`` (``ops/index.py``,
``ops/index_extra.py``), so their gradients are those ops':

* ``put(input, index, source, accumulate=False)``: ``input`` seen as 1-D, ``source`` written
  (or added) at the flat ``index`` (negative indices count from the end).
* ``index_reduce(input, dim, index, source, reduce, include_self=True)``: slice ``i`` of
  ``source`` along ``dim`` is folded into slice ``index[i]`` of ``input`` with ``reduce``
  (``prod``, ``mean``, ``amax``, ``amin``): a ``scatter_reduce`` whose index is ``index``
  broadcast over ``source``'s shape.
* ``segment_reduce(data, reduce, *, lengths=None, offsets=None, axis=0, unsafe=False,
  initial=None)``: consecutive segments along ``axis`` (``lengths`` of shape
  ``data.shape[:axis] + (S,)``, or ``offsets`` with one more entry) reduced with ``sum``,
  ``prod``, ``mean``, ``max``/``amax``, ``min``/``amin``. ``initial`` joins every segment's
  reduction (``mean`` adds it to the sum but not the count, as PyTorch); an empty segment
  gives ``initial``, else 0 (sum), 1 (prod), NaN (mean), -inf (max), inf (min).
* ``nonzero_static(input, *, size, fill_value=-1)``: ``nonzero`` cut or padded (with
  ``fill_value``) to ``size`` rows.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from ._util import inplace, wrap_dim

__all__ = ["put", "index_reduce", "segment_reduce", "nonzero_static"]


def _ops():
    from .. import ops

    return ops


# ---------------------------------------------------------------------------- put
def _put(input, index, source, accumulate, name):
    n = input.numel()
    if index.numel() != source.numel():
        raise RuntimeError(f"{name}(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if index.dtype.is_floating_point or index.dtype.name == "bool":
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {index.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{name}(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype} and source.dtype = {source.dtype}; cast source with .to(self.dtype)")
    idx = index.array.reshape(-1).astype(np.int64)
    xp = get_array_module(idx)
    bad = (idx < -n) | (idx >= n)
    if bool(bad.any()):
        first = int(idx[bad][0])
        raise IndexError(f"out of range: tried to access index {first} on a tensor of {n} elements.")
    idx = _wrap(xp.where(idx < 0, idx + n, idx))
    flat = input.reshape(-1)
    src = source.reshape(-1)
    out = flat.scatter_add(0, idx, src) if accumulate else flat.scatter(0, idx, src)
    return out.reshape(input.shape)


@register("put")
def put(input, index, source, accumulate: bool = False) -> Tensor:
    """``input`` with ``source`` written (or added) at the flat positions ``index``."""
    return _put(input, index, source, accumulate, "put_")  # PyTorch names put_ in put's errors too


@register("put_")
def put_(input, index, source, accumulate: bool = False) -> Tensor:
    return inplace(input, _put(input, index, source, accumulate, "put_"))


# ---------------------------------------------------------------------------- index_reduce
_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _index_reduce(input, dim, index, source, reduce, include_self, name):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"{name.rstrip('_')}(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    d = wrap_dim(int(dim), max(input.ndim, 1))
    if index.dtype.is_floating_point or index.dtype.name == "bool":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{name}(): self ({input.dtype}) and source ({source.dtype}) must have the same scalar "
                           f"type; cast source with .to(self.dtype)")
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, got a {index.ndim}-D index")
    src_len = source.shape[d] if source.ndim else 1
    if index.numel() != src_len:
        raise RuntimeError(f"{name}(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                           f"({src_len})")
    if source.ndim != input.ndim or any(s != t for i, (s, t) in enumerate(zip(source.shape, input.shape)) if i != d):
        raise RuntimeError(f"{name}(): Source/destination tensor must have same slice shapes; got source shape "
                           f"{tuple(source.shape)} and self shape {tuple(input.shape)} along dim {d}")
    if input.ndim == 0:
        return _ops().scatter_reduce(input.reshape(1), 0, index.reshape(1), source.reshape(1), reduce,
                                     include_self=include_self).reshape(())
    shape = [1] * source.ndim
    shape[d] = -1
    idx = index.reshape(shape).expand(*source.shape)
    return _ops().scatter_reduce(input, d, idx, source, reduce, include_self=include_self)


@register("index_reduce")
def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True) -> Tensor:
    """Fold slices of ``source`` along ``dim`` into the slices ``index`` of ``input``."""
    return _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce_")  # PyTorch's name


@register("index_reduce_")
def index_reduce_(input, dim: int, index, source, reduce: str, *, include_self: bool = True) -> Tensor:
    return inplace(input, _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce_"))


# ---------------------------------------------------------------------------- segment_reduce
_SEGMENT = {"sum": ("sum", 0.0), "prod": ("prod", 1.0), "mean": ("sum", 0.0), "max": ("amax", -np.inf),
            "amax": ("amax", -np.inf), "min": ("amin", np.inf), "amin": ("amin", np.inf)}


@register("segment_reduce")
def segment_reduce(data, reduce: str, *, lengths=None, indices=None, offsets=None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis`` (module docstring)."""
    if reduce not in _SEGMENT:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet; pass lengths or "
                           "offsets")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    if lengths is None:
        lengths = offsets.narrow(-1, 1, offsets.shape[-1] - 1) - offsets.narrow(-1, 0, offsets.shape[-1] - 1)
    ax = wrap_dim(int(axis), data.ndim)
    if lengths.ndim != ax + 1 or tuple(lengths.shape[:ax]) != tuple(data.shape[:ax]):
        raise RuntimeError(f"segment_reduce(): expected lengths of shape data.shape[:axis] + (segments,) = "
                           f"{tuple(data.shape[:ax])} + (S,), got {tuple(lengths.shape)} for axis {ax}")
    lens = lengths.array.astype(np.int64)
    xp = get_array_module(lens)
    n = data.shape[ax]
    if not unsafe and (bool((lens < 0).any()) or bool((lens.sum(-1) != n).any())):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    n_seg = lens.shape[-1]
    ends = xp.cumsum(lens, axis=-1)  # (*pre, S)
    pos = xp.arange(n)
    seg = (ends[..., None, :] <= pos[:, None]).sum(-1)  # (*pre, n): segment of each position
    seg = seg.reshape(seg.shape + (1,) * (data.ndim - ax - 1))
    idx = _wrap(xp.broadcast_to(seg, tuple(data.shape)).astype(np.int64))
    op, empty = _SEGMENT[reduce]
    out_shape = tuple(data.shape[:ax]) + (n_seg,) + tuple(data.shape[ax + 1:])
    start = empty if initial is None else float(initial)
    ops = _ops()
    base = ops.full(out_shape, start, dtype=data.dtype, device=data.device)
    out = ops.scatter_reduce(base, ax, idx, data, op, include_self=True)
    if reduce == "mean":
        cnt = lens.reshape(lens.shape + (1,) * (data.ndim - ax - 1)).astype(data.array.dtype)
        cnt_t = _wrap(xp.broadcast_to(cnt, out_shape).copy())
        empty_fill = np.nan if initial is None else float(initial)
        out = ops.where(cnt_t > 0, out / ops.clamp(cnt_t, min=1), empty_fill)
    return out


# ---------------------------------------------------------------------------- nonzero_static
@register("nonzero_static")
def nonzero_static(input, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows: cut, or padded with ``fill_value``."""
    size = int(size)
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = input.nonzero().array  # (K, ndim)
    xp = get_array_module(nz)
    k, nd = nz.shape[0], max(input.ndim, 1) if input.ndim else 0
    out = xp.full((size, nd), int(fill_value), dtype=np.int64)
    m = min(k, size)
    out[:m] = nz[:m].reshape(m, nd)
    return _wrap(out)
