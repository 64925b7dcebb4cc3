"""Integer GEMM for the quantized layers: ``acc[m, n] = sum_k (a[m, k] - za) * (w[n, k] - zw)``
with exact int32 accumulation, on NumPy.

NumPy has no int8 GEMM: ``np.matmul`` on integers is a plain loop about 50x slower than
float32 BLAS (measured, ``shardflow bench quant``). What the layers use instead:

* ``"blas"`` (default): the differences are small integers, and a float32 sum of integer
  products is exact while every partial sum stays below 2^24. So ``K`` is cut into chunks of
  ``2^24 // (max|a - za| * max|w - zw|)`` (514 for uint8 activations and symmetric int8
  weights), each chunk is one float32 BLAS GEMM (exact), and the chunks are summed in int32.
  Same result as an int32 accumulator, bit for bit, at float32 GEMM speed.
* ``"numba"``: an int32-accumulating loop compiled by numba (optional dependency,
  ``pip install numba``); about 3-4x slower than the BLAS path here, kept for comparison.
* ``"numpy"``: ``np.matmul`` on int32 (the slow reference).

``set_int8_backend(name)`` picks one; the result is identical for all three.
"""

from __future__ import annotations

import numpy as np

__all__ = ["int8_matmul", "set_int8_backend", "get_int8_backend", "exact_chunk"]

_EXACT = 1 << 24  # float32 represents every integer up to 2^24
_state = {"backend": "blas"}
_numba_kernel = None


def set_int8_backend(name: str) -> None:
    """Choose ``"blas"`` (default), ``"numba"`` or ``"numpy"`` for the int8 GEMMs."""
    if name not in ("blas", "numba", "numpy"):
        raise ValueError(f"int8 backend must be 'blas', 'numba' or 'numpy', got {name!r}")
    if name == "numba":
        _get_numba_kernel()
    _state["backend"] = name


def get_int8_backend() -> str:
    return _state["backend"]


def exact_chunk(a_bound: int, w_bound: int) -> int:
    """Largest K whose float32 dot products of integers bounded by these are exact."""
    return max(1, _EXACT // max(1, a_bound * w_bound))


def _bound(dtype_kind_unsigned: bool, zp) -> int:
    zp = np.asarray(zp)
    if dtype_kind_unsigned:  # uint8 minus a zero point in [0, 255]
        return int(max(255 - zp.min(), zp.max(), 1))
    return int(max(127 + abs(zp).max(), 128))


def int8_matmul(a: np.ndarray, a_zp: int, w: np.ndarray, w_zp=0, backend: str | None = None):
    """int32 ``(a - a_zp) @ (w - w_zp).T`` for ``a`` (M, K) uint8/int8 and ``w`` (N, K) int8;
    ``w_zp`` a scalar or one value per row of ``w``."""
    backend = backend or _state["backend"]
    w_zp = np.asarray(w_zp)
    if backend == "numba":
        return _get_numba_kernel()(a, np.int32(a_zp), w, np.broadcast_to(w_zp, (w.shape[0],)).astype(np.int32))
    if backend == "numpy":
        ai = a.astype(np.int32) - np.int32(a_zp)  # (M, K)
        wi = w.astype(np.int32) - (w_zp.astype(np.int32)[:, None] if w_zp.ndim else np.int32(w_zp))
        return np.matmul(ai, wi.T)  # (M, N)
    af = a.astype(np.float32)
    af -= np.float32(a_zp)  # (M, K)
    wf = w.astype(np.float32)
    if np.any(w_zp != 0):
        wf -= w_zp.astype(np.float32)[:, None] if w_zp.ndim else np.float32(w_zp)
    k = a.shape[1]
    step = exact_chunk(_bound(a.dtype.kind == "u", a_zp), _bound(False, w_zp))
    if k <= step:
        return np.matmul(af, wf.T).astype(np.int32)
    acc = np.zeros((a.shape[0], w.shape[0]), np.int32)
    for s in range(0, k, step):
        acc += np.matmul(af[:, s:s + step], wf[:, s:s + step].T).astype(np.int32)
    return acc


def _get_numba_kernel():
    global _numba_kernel
    if _numba_kernel is None:
        try:
            import numba
        except ImportError:
            raise ImportError(
                "the 'numba' int8 backend needs numba; install it with `pip install numba`, or "
                "use set_int8_backend('blas')"
            ) from None

        @numba.njit(cache=False, fastmath=True)
        def kernel(a, a_zp, w, w_zp):  # pragma: no cover - compiled
            m, k = a.shape
            n = w.shape[0]
            out = np.empty((m, n), np.int32)
            for i in range(m):
                for j in range(n):
                    s = np.int32(0)
                    for t in range(k):
                        s += (np.int32(a[i, t]) - a_zp) * (np.int32(w[j, t]) - w_zp[j])
                    out[i, j] = s
            return out

        _numba_kernel = kernel
    return _numba_kernel
