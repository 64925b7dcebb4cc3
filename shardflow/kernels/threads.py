"""``torch.get_num_threads`` / ``set_num_threads`` (and the inter-op pair) in shardflow.

Intra-op threads here are the threads of the fused Numba kernels (``kernels/_numba.py``):
``set_num_threads(n)`` sets them (capped at Numba's pool size) and ``get_num_threads()``
reports them; without Numba it records ``n`` and reports it (default: the CPU count).
NumPy's BLAS keeps the thread count it started with (set ``OMP_NUM_THREADS`` /
``OPENBLAS_NUM_THREADS`` before starting Python to change it). shardflow runs no inter-op
thread pool: the inter-op pair records and reports a number, as PyTorch's does before its
pool starts.
"""

from __future__ import annotations

import os

from . import _numba

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads"]

_state = {"intra": None, "interop": None}


def _check(n, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"{name}: Expected num_threads to be positive, but got {n!r}")
    return n


def get_num_threads() -> int:
    nb = _numba.numba_module()
    if nb is not None:
        return _numba.num_threads()
    return _state["intra"] or os.cpu_count() or 1


def set_num_threads(n: int) -> None:
    n = _check(n, "set_num_threads")
    _state["intra"] = n
    nb = _numba.numba_module()
    if nb is not None:
        _numba.set_threads(n)


def get_num_interop_threads() -> int:
    return _state["interop"] or os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    _state["interop"] = _check(n, "set_num_interop_threads")
