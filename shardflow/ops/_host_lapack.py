"""LAPACK routines NumPy does not expose (``getrf``, ``geqrf``, ``sytrf``, ``sytrs``), called
through SciPy's ``scipy.linalg.lapack`` wrappers (``backend/scipy_lib.py``, imported on first
use) once per matrix of a batch.

SciPy's wrappers take one matrix, so a batch ``(..., m, n)`` is flattened to ``(B, m, n)``
and looped over in Python (the linear algebra here is for small and medium matrices; the
loop costs microseconds per matrix next to the factorisation). A CuPy array is copied to the
host, factored there and copied back: cuSOLVER's ``getrf`` / ``sytrf`` have no batched CuPy
entry point, and these factorisations are rarely on a training step's hot path.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import CPU, device_of, to_device
from ..backend.scipy_lib import scipy_module


def lapack_routine(name: str, array: np.ndarray):
    """SciPy's wrapper of LAPACK's ``?<name>`` for ``array``'s dtype (``s``/``d``/``c``/``z``)."""
    lapack = scipy_module("linalg").lapack
    return lapack.get_lapack_funcs(name, (array,))


def host(array) -> np.ndarray:
    """``array`` as a NumPy array (a copy from the device for CuPy)."""
    return to_device(array, CPU)


def like(result: np.ndarray, array):
    """``result`` (a host array) on ``array``'s device."""
    return to_device(result, device_of(array))


def batched(array: np.ndarray) -> tuple[np.ndarray, tuple]:
    """``(..., m, n) -> (B, m, n)`` and the batch shape to restore."""
    batch = array.shape[:-2]
    return array.reshape((math.prod(batch),) + array.shape[-2:]), batch  # not -1: empty matrices


def getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LU with partial pivoting of each ``(m, n)`` matrix of a host array ``(..., m, n)``:
    ``(LU, pivots, info)`` in LAPACK's (and torch's) convention — ``pivots`` 1-based int32
    ``(..., k)``, ``k = min(m, n)``; ``info`` int32 ``(...)``: 0, or ``i`` when ``U[i-1, i-1]``
    is exactly zero."""
    flat, batch = batched(np.ascontiguousarray(a))
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = np.empty_like(flat)
    piv = np.empty((flat.shape[0], k), dtype=np.int32)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    if k:
        routine = lapack_routine("getrf", flat)
        for b in range(flat.shape[0]):
            lu[b], p, info[b] = routine(flat[b])
            piv[b] = p + 1  # SciPy returns LAPACK's pivots 0-based
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def pivots_to_permutation(pivots: np.ndarray, m: int) -> np.ndarray:
    """The row order ``perm`` (``(..., m)``, int64) of LAPACK's row interchanges: row ``i`` was
    swapped with row ``pivots[i] - 1`` for ``i = 0 .. k-1`` in turn, so ``A[perm] = L U`` and
    ``P[perm[j], j] = 1`` in ``A = P L U``."""
    batch = pivots.shape[:-1]
    perm = np.broadcast_to(np.arange(m), batch + (m,)).copy()
    count = math.prod(batch)
    flat, piv = perm.reshape(count, m), pivots.reshape(count, pivots.shape[-1]).astype(np.int64) - 1
    rows = np.arange(flat.shape[0])
    for i in range(piv.shape[-1]):
        j = piv[:, i]
        a, b = flat[rows, i].copy(), flat[rows, j].copy()
        flat[rows, i], flat[rows, j] = b, a
    return perm
