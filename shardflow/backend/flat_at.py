"""``ufunc.at(target, index, values)`` on NumPy arrays through a flat, 1-D index.

NumPy 2's ``ufunc.at`` has a fast loop only for one 1-D integer index into a 1-D array; any
other index (a row index into a 2-D array, a tuple of index arrays) takes its generic
per-element path, 5-15x slower (NumPy 2.4, float32: 4096 rows of 64 into a (1024, 64)
array 2.3 ms as rows, 0.3 ms flat; 8192 rows of 256 into (50000, 256) 42 ms, 15 ms flat).
``flat_at`` turns an index made of integer arrays (one per leading dim, broadcast
together, as gather/scatter/index_add/grid_sample build them) into the row-major flat
position of every element it selects and makes that one fast call.

Results are bit-identical to ``ufunc.at``'s: both visit the index's broadcast shape in C
order and, for each of its positions, the trailing (sliced) elements in C order, so every
target element sees the same operations in the same order (``add`` of float32 stays a
float32 running sum in index order). Values are not cast here: the ufunc's loop is chosen
from the same operand dtypes as before.

Indexes it does not handle (slices before an array, booleans, ``None``, out-of-range values,
non-contiguous targets much larger than the values) and Python-number values go to
``ufunc.at`` unchanged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["flat_at", "row_plan"]

_FULL = slice(None)


def _int_arrays(index):
    """``index`` as a tuple of integer ndarrays (plain ints allowed), or None. Trailing
    ``...`` and ``:`` select every trailing element, as no item does: they are dropped
    (indexing's parser ends a row index with ``...``, ``x[idx]`` is ``x[idx, ...]``)."""
    items = index if isinstance(index, tuple) else (index,)
    end = len(items)
    while end and (items[end - 1] is Ellipsis or (type(items[end - 1]) is slice and items[end - 1] == _FULL)):
        end -= 1
    items = items[:end]
    out = []
    for it in items:
        if isinstance(it, np.ndarray) and it.dtype.kind in "iu":
            out.append(it)
        elif isinstance(it, int | np.integer) and not isinstance(it, bool | np.bool_):
            out.append(np.asarray(it, np.intp))
        else:
            return None
    return out


def _rows(arrays, lead):
    """Row-major position of each selected row among ``prod(lead)`` rows, or None when an
    index is out of range (``ufunc.at`` then raises its own IndexError)."""
    rows = None
    for ix, n in zip(arrays, lead, strict=True):
        if ix.size:
            lo, hi = int(ix.min()), int(ix.max())
            if lo < -n or hi >= n:
                return None
            if lo < 0:
                ix = np.where(ix < 0, ix + n, ix)
        ix = ix.astype(np.intp, copy=False)
        rows = ix if rows is None else rows * n + ix
    return rows


def row_plan(target: np.ndarray, index, values):
    """``(rows, vals)`` with ``ufunc.at(target, index, values)`` == ``ufunc.at`` of
    ``vals[r]`` into row ``rows[r]`` of ``target.reshape(R, D)`` for r in order (``rows``
    1-D intp in range, ``vals`` (n, D), maybe a broadcast view); None for what ``ufunc.at``
    must do itself: an index not made of int arrays, a Python-number value, shapes that do
    not broadcast, an index out of range."""
    arrays = _int_arrays(index)
    # a Python number is a "weak" operand of the ufunc (NEP 50): left to ufunc.at, which casts
    # it to the target's dtype, where np.asarray would make it float64/int64
    if arrays is None or not isinstance(values, np.ndarray | np.generic) or not arrays or len(arrays) > target.ndim:
        return None
    k = len(arrays)
    lead, tail = target.shape[:k], target.shape[k:]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        vals = np.broadcast_to(np.asarray(values), shape + tail)
    except ValueError:
        return None
    rows = _rows(arrays, lead)
    if rows is None:
        return None
    n = int(np.prod(shape, dtype=np.int64))
    # the row length spelled out: reshape(0, -1) is ambiguous for an empty index
    return np.broadcast_to(rows, shape).reshape(-1), vals.reshape(n, int(np.prod(tail, dtype=np.int64)))


def flat_at(ufunc, target: np.ndarray, index, values) -> None:
    """``ufunc.at(target, index, values)`` for a NumPy ``target`` (module docstring)."""
    if not target.size:
        ufunc.at(target, index, values)
        return
    if not target.flags.c_contiguous:
        if target.size > 8 * max(np.size(values), 1) or row_plan(target, index, values) is None:
            ufunc.at(target, index, values)  # copying in and out would cost more
            return
        work = np.ascontiguousarray(target)
        flat_at(ufunc, work, index, values)
        target[...] = work
        return
    plan = row_plan(target, index, values)
    if plan is None:
        ufunc.at(target, index, values)
        return
    rows, vals = plan
    d = vals.shape[1]
    pos = rows if d == 1 else (rows[:, None] * d + np.arange(d, dtype=np.intp)).reshape(-1)
    ufunc.at(target.reshape(-1), pos, vals.reshape(-1))
