"""The ufunc methods CuPy lacks, on any array module: ``accumulate``, ``multiply_at`` and
``scatter_at`` (``add``/``maximum``/``minimum.at`` for the dtypes CuPy's scatter kernels lack).

CuPy 14 gives ``ufunc.accumulate`` to ``add`` and ``multiply`` only, and ``ufunc.at`` to
the ufuncs with a scatter kernel (``add``, ``maximum``, ``minimum``, the bitwise ones); every
other call raises ``NotImplementedError`` on the GPU (first met by ``tests/gpu`` in session
24: ``cummax``, ``cummin``, ``logcumsumexp``, ``scatter_reduce(reduce="prod")``). NumPy
arrays keep NumPy's own methods; device arrays take the routes below, built from
elementwise ops and slicing that every array module has.

* ``accumulate(ufunc, a, axis)``: a Hillis-Steele scan, ``ceil(log2 n)`` rounds of
  ``out[k:] = f(out[k:], out[:-k])`` for ``k = 1, 2, 4, ...``. Right for any associative
  ``f`` (max, min, logaddexp); ``O(n log n)`` work, but each round is one device kernel.
  NaN propagates as in NumPy's (``maximum``/``minimum`` propagate it).
* ``multiply_at(target, index, values)``: ``target[index] *= values`` with repeated indices
  multiplying. The flat positions are sorted and each run of equal positions is
  multiplied out by a segmented scan (the same rounds, only across equal positions); the
  last of each run holds the run's product, which multiplies its position once.
* ``scatter_at(name, target, index, values)``: ``add``/``maximum``/``minimum.at``. CuPy's
  scatter kernels take int32/int64/uint32/uint64/float32/float64 (and float16 for ``add``)
  and raise ``TypeError`` for the rest (an H200 met it in session 30: ``istft`` of a complex
  input, through ``index_add``). A complex ``add`` scatters the real and imaginary parts (views
  of the target); other dtypes (bool, 8/16-bit ints, float16 max/min, bfloat16) go through a
  wide copy (int64 or float32) and are cast back, which is NumPy's wrap-around and rounding.
  NumPy arrays go through ``flat_at.py`` (one flat index: NumPy's fast ``ufunc.at`` loop).
"""

from __future__ import annotations

import numpy as np

from .flat_at import flat_at
from .xp import get_array_module


def accumulate(ufunc_name: str, a, axis: int = 0):
    """``getattr(np, ufunc_name).accumulate(a, axis)`` on NumPy or CuPy arrays."""
    xp = get_array_module(a)
    ufunc = getattr(xp, ufunc_name)
    if xp is np or ufunc_name in ("add", "multiply"):
        return ufunc.accumulate(a, axis=axis)
    x = xp.moveaxis(a, axis, -1)
    out = x.copy()
    n, k = x.shape[-1], 1
    while k < n:
        nxt = out.copy()
        nxt[..., k:] = ufunc(out[..., k:], out[..., :-k])
        out, k = nxt, 2 * k
    return xp.moveaxis(out, -1, axis)


def multiply_at(target, index, values) -> None:
    """``np.multiply.at(target, index, values)`` on NumPy or CuPy arrays (``index``: a tuple
    of integer arrays broadcastable together, one per dim of ``target``)."""
    xp = get_array_module(target)
    if xp is np:
        np.multiply.at(target, index, values)
        return
    shape = xp.broadcast_shapes(*(ix.shape for ix in index)) if index else ()
    flat = xp.zeros(shape, np.int64)
    stride = 1
    for d in range(target.ndim - 1, -1, -1):  # row-major flat position of every target element
        flat = flat + xp.broadcast_to(index[d], shape).astype(np.int64) * stride
        stride *= target.shape[d]
    flat = flat.reshape(-1)
    vals = xp.broadcast_to(values, shape).reshape(-1).astype(target.dtype)
    if flat.size == 0:
        return
    order = xp.argsort(flat)
    pos, prod = flat[order], vals[order]
    n, k = pos.shape[0], 1
    while k < n:  # segmented scan: multiply only within a run of equal positions
        nxt = prod.copy()
        same = pos[k:] == pos[:-k]
        nxt[k:] = xp.where(same, prod[k:] * prod[:-k], prod[k:])
        prod, k = nxt, 2 * k
    last = xp.ones(n, bool)
    last[:-1] = pos[1:] != pos[:-1]  # the last of each run holds the run's product
    factor = xp.ones(target.size, target.dtype)
    factor[pos[last]] = prod[last]
    target *= factor.reshape(target.shape)


# the dtypes of CuPy 14's scatter kernels (cupy/_core/_routines_indexing.pyx, _scatter_op_single)
_SCATTER_DTYPES = {
    "add": frozenset(map(np.dtype, ("int32", "int64", "uint32", "uint64", "float16", "float32", "float64"))),
    "maximum": frozenset(map(np.dtype, ("int32", "int64", "uint32", "uint64", "float32", "float64"))),
}
_SCATTER_DTYPES["minimum"] = _SCATTER_DTYPES["maximum"]


def scatter_at(ufunc_name: str, target, index, values) -> None:
    """``getattr(np, ufunc_name).at(target, index, values)`` (``add``, ``maximum``,
    ``minimum``) on NumPy or CuPy arrays, whatever ``target``'s dtype."""
    xp = get_array_module(target)
    ufunc = getattr(xp, ufunc_name)
    if xp is np:
        flat_at(ufunc, target, index, values)
        return
    if target.dtype in _SCATTER_DTYPES[ufunc_name]:
        ufunc.at(target, index, values)
        return
    if target.dtype.kind == "c" and ufunc_name == "add":
        values = xp.asarray(values)
        scatter_at("add", target.real, index, values.real)
        if values.dtype.kind == "c":
            scatter_at("add", target.imag, index, values.imag)
        return
    if target.dtype.kind == "c":
        raise TypeError(f"{ufunc_name}.at of a complex array has no device kernel; use a real dtype")
    wide = target.astype(np.float32 if target.dtype.kind == "f" or target.dtype.kind == "V" else np.int64)
    ufunc.at(wide, index, xp.asarray(values).astype(wide.dtype))
    target[...] = wide.astype(target.dtype)
