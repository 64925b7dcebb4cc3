"""Searching and counting with PyTorch's names: ``searchsorted``, ``bucketize``, ``unique``,
``unique_consecutive``, ``bincount``, ``histc``, ``isin``. None of them has a gradient (their
results are indices, counts or booleans; ``unique``'s values are a selection PyTorch does not
differentiate either).

* ``searchsorted(sorted_sequence, values, right=False, side=None, sorter=None)``: a 1-D
  sequence serves every value; an N-D one is searched row by row, its leading dims matching
  ``values``' (one ``np.searchsorted`` per row). ``side='right'`` = ``right=True``.
* ``bucketize(input, boundaries, right=False)`` is ``searchsorted(boundaries, input, right)``:
  bucket ``i`` holds ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``<=`` / ``<``).
* ``unique`` is always sorted (as PyTorch's CPU kernel, whatever ``sorted`` says); with
  ``dim`` it deduplicates slices. ``return_inverse`` / ``return_counts`` add outputs in
  PyTorch's order. Without ``dim`` only the asked-for outputs are computed (the inverse
  needs a stable argsort, 4x a sort), and integers spanning at most twice their count are
  counted (``np.bincount``: one pass, no sort); the results are the same exact integers.
* ``histc(input, bins, min, max)``: equal-width bins over ``[min, max]`` (the data's range when
  both are 0), values outside ignored, the last bin closed; the input's float dtype.
Indices are int64 (int32 with ``out_int32=True``). bfloat16 is searched and deduplicated as its
(exact) float32 image: NumPy mis-orders ml_dtypes' bfloat16 around NaN.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from ._util import orderable

__all__ = ["searchsorted", "bucketize", "unique", "unique_consecutive", "bincount", "histc", "isin"]


def _arr(x):
    return x.array if isinstance(x, Tensor) else np.asarray(x)


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _out(arr, like):
    """A result on the device of ``like`` (a Tensor or array)."""
    a = _arr(like)
    return _wrap(get_array_module(a).asarray(arr) if hasattr(a, "get") else arr)


@register("searchsorted")
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None,
                 sorter=None) -> Tensor:
    """Insertion indices of ``input`` into the last dim of ``sorted_sequence`` (module docstring)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    seq, val = orderable(_host(_arr(sorted_sequence))), orderable(_host(_arr(input)))
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(_arr(sorter)).astype(np.int64), axis=-1)
    how = "right" if right else "left"
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension; pass a 1-D (or N-D) sorted sequence")
    if seq.ndim <= 1:
        out = np.searchsorted(seq.reshape(-1), val, side=how)
    else:
        if val.ndim != seq.ndim or val.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                f"{list(seq.shape)} and input value tensor {list(val.shape)}"
            )
        rows = int(np.prod(val.shape[:-1]))
        rows_s, rows_v = seq.reshape(rows, seq.shape[-1]), val.reshape(rows, val.shape[-1])
        out = np.zeros((rows, val.shape[-1]), np.int64)  # (no rows: nothing to search)
        for r in range(rows):
            out[r] = np.searchsorted(rows_s[r], rows_v[r], side=how)
        out = out.reshape(val.shape)
    out = np.asarray(out, np.int32 if out_int32 else np.int64)
    return _out(out, input if isinstance(input, Tensor) else sorted_sequence)


@register("bucketize")
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value of ``input`` among 1-D ``boundaries`` (module docstring)."""
    if _arr(boundaries).ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({_arr(boundaries).ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _unique_outputs(values, inverse, counts, return_inverse, return_counts, like):
    outs = [_out(values, like)]  # (inverse / counts: None where not asked for)
    if return_inverse:
        outs.append(_out(inverse.astype(np.int64), like))
    if return_counts:
        outs.append(_out(counts.astype(np.int64), like))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _unique_flat(flat, need_inverse: bool, need_counts: bool):
    """``(values, inverse or None, counts or None)`` of a 1-D array (module docstring)."""
    if flat.dtype.kind in "iu" and flat.size:
        lo, hi = int(flat.min()), int(flat.max())
        span = hi - lo + 1
        if span <= 2 * flat.size and hi < 2**63:  # (uint64 past int64: NumPy's path)
            off = flat.astype(np.intp)
            if lo:
                off -= lo
            counts = np.bincount(off, minlength=span)
            present = np.flatnonzero(counts)  # ascending: the sorted distinct values
            values = (present + lo).astype(flat.dtype)
            inverse = (np.cumsum(counts > 0) - 1)[off] if need_inverse else None
            return values, inverse, counts[present] if need_counts else None
    if flat.dtype.kind in "fc" and np.isnan(flat).any():
        return _unique_with_nans(flat, need_inverse, need_counts)
    out = np.unique(flat, return_inverse=need_inverse, return_counts=need_counts)
    if not (need_inverse or need_counts):
        return out, None, None
    out = list(out)
    return out[0], out[1] if need_inverse else None, out[-1] if need_counts else None


def _unique_with_nans(flat, need_inverse: bool, need_counts: bool):
    """PyTorch keeps every NaN as a distinct value (NaN != NaN: ``unique([nan, 1, nan])`` is
    ``[1, nan, nan]``, counts ``[1, 1, 1]``), where NumPy's ``unique`` merges them into one.
    A stable sort puts the NaNs last in their original order, which is the order torch's
    inverse indices give them; a value starts a new group wherever it differs from the one
    before, and a NaN differs from everything."""
    perm = np.argsort(flat, kind="stable")
    s = flat[perm]
    start = np.ones(s.shape[0], bool)
    start[1:] = s[1:] != s[:-1]
    values = s[start]
    inverse = counts = None
    if need_inverse:
        inverse = np.empty(flat.shape[0], np.intp)
        inverse[perm] = np.cumsum(start) - 1
    if need_counts:
        counts = np.diff(np.append(np.flatnonzero(start), s.shape[0]))
    return values, inverse, counts


@register("unique")
def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Sorted distinct values (or slices along ``dim``), optionally with inverse and counts."""
    a = _host(input.array)
    if dim is None:
        vals, inv, cnt = _unique_flat(orderable(a).reshape(-1), return_inverse, return_counts)
        vals = vals.astype(a.dtype, copy=False)  # (bfloat16 deduplicated as its exact float32)
        inv = None if inv is None else inv.reshape(a.shape)
    else:
        d = dim + a.ndim if dim < 0 else dim
        vals, inv, cnt = np.unique(orderable(a), return_inverse=True, return_counts=True, axis=d)
        vals = vals.astype(a.dtype, copy=False)
        inv = inv.reshape(-1)
    return _unique_outputs(vals, inv, cnt, return_inverse, return_counts, input)


@register("unique_consecutive")
def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Collapse runs of equal consecutive values (or slices along ``dim``)."""
    a = _host(input.array)
    if dim is None:
        flat = a.reshape(-1)
        start = np.ones(flat.shape[0], bool)
        start[1:] = flat[1:] != flat[:-1]
        vals = flat[start]
        inv = (np.cumsum(start) - 1).reshape(a.shape)
    else:
        d = dim + a.ndim if dim < 0 else dim
        m = np.moveaxis(a, d, 0)
        start = np.ones(m.shape[0], bool)
        if m.shape[0] > 1:
            start[1:] = (m[1:] != m[:-1]).reshape(m.shape[0] - 1, -1).any(axis=1)
        vals = np.moveaxis(m[start], 0, d)
        inv = np.cumsum(start) - 1
    cnt = np.diff(np.append(np.flatnonzero(start), start.shape[0]))
    return _unique_outputs(vals, inv, cnt, return_inverse, return_counts, input)


@register("bincount")
def bincount(input, weights=None, minlength: int = 0) -> Tensor:
    """Counts of each non-negative integer in a 1-D ``input`` (sums of ``weights`` with them)."""
    a = _host(input.array)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got dtype {a.dtype} "
                           f"and shape {tuple(a.shape)}")
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else _host(_arr(weights))
    out = np.bincount(a, weights=w, minlength=minlength)
    if w is not None:
        out = out.astype(w.dtype if w.dtype.kind == "f" else np.float64)
    return _out(out, input)


@register("histc")
def histc(input, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``input`` with ``bins`` equal bins over ``[min, max]`` (module docstring)."""
    a = _host(input.array)
    if a.dtype.kind not in "fV":
        raise RuntimeError(f"torch.histc: input tensor must be a floating point tensor, got {a.dtype}")
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, got min {min} and max {max}")
    x = a.astype(np.float64).reshape(-1)
    x = x[(x >= lo) & (x <= hi)]
    out, _ = np.histogram(x, bins=int(bins), range=(lo, hi))
    return _out(out.astype(a.dtype), input)


@register("isin")
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is in ``test_elements`` (bool, ``elements``' shape)."""
    e, t = _host(_arr(elements)), _host(_arr(test_elements))
    return _out(np.isin(e, t, assume_unique=assume_unique, invert=invert), elements if isinstance(elements, Tensor)
                else test_elements)
