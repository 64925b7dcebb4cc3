"""Arrays as MPI buffers (layer L2): datatypes, half precision, packing.

Arrays go to MPI as ``[buffer, MPI datatype]`` (:func:`spec`), never pickled, with MPI's
predefined datatypes (:func:`mpi_type`; reductions need them). MPI has no reduction for
float16 or ml_dtypes' bfloat16 (:func:`is_half`): a reduction runs on a float32 copy
(:func:`for_reduction`), and a collective that only moves data sends their bytes
(:func:`move_spec`). Non-contiguous arrays travel through a contiguous copy and are
written back afterwards (:func:`for_reduction`, :func:`contiguous`).
"""

from __future__ import annotations

import numpy as np

from .mpi_lib import mpi

_TYPES: dict = {}  # dtype -> MPI's predefined datatype


def is_half(dt) -> bool:
    """float16 or ml_dtypes' bfloat16 (kind 'V'); cheaper than dtype equality on the hot path."""
    return dt.itemsize == 2 and (dt.kind == "f" or dt.kind == "V")


def mpi_type(dt):
    """MPI's predefined datatype for ``dt`` (TypeError naming the fix if it has none)."""
    t = _TYPES.get(dt)
    if t is None:
        t = mpi()._typedict.get(np.dtype(dt).char)
        if t is None:
            raise TypeError(f"dtype {dt} has no MPI datatype; cast to float32/float64/int64 first")
        _TYPES[dt] = t
    return t


def spec(a) -> list:
    """``[a, its MPI datatype]``: the buffer argument of an mpi4py call."""
    t = _TYPES.get(a.dtype)  # the cache inline: this runs on every large collective
    return [a, t if t is not None else mpi_type(a.dtype)]


def move_spec(a) -> list:
    """The buffer argument for moving ``a`` without reducing it (half types as bytes)."""
    dt = a.dtype
    if dt.itemsize == 2 and (dt.kind == "f" or dt.kind == "V"):  # is_half, inline
        a = a.view(np.uint8)
    t = _TYPES.get(a.dtype)
    return [a, t if t is not None else mpi_type(a.dtype)]


def for_reduction(array):
    """``(buffer, back)``: what MPI reduces in place for ``array``, and the function that
    writes the result back into ``array`` (None when the buffer is ``array`` itself).

    Half types are reduced in a float32 copy, a non-contiguous array in a packed copy; no
    array of the caller is written here (this runs before the signatures are checked)."""
    if is_half(array.dtype):
        buf = array.astype(np.float32)
    elif array.flags.c_contiguous:
        return array, None
    else:
        buf = np.ascontiguousarray(array)

    def back(a=array, b=buf):
        a[...] = b

    return buf, back


def contiguous(array, fill: bool = True):
    """``(buffer, back)``: ``array`` itself when C-contiguous (``back`` None), else a C-order
    buffer (holding ``array``'s values when ``fill``; a receive needs none) and the
    function that copies it back into ``array``."""
    if array.flags.c_contiguous:
        return array, None
    buf = np.ascontiguousarray(array) if fill else np.empty(array.shape, dtype=array.dtype)

    def back(a=array, b=buf):
        a[...] = b

    return buf, back
