"""``torch.cuda.nvtx``: NVTX ranges and marks for Nsight timelines.

With CUDA they go to CuPy's NVTX bindings (``cupy.cuda.nvtx``, when CuPy has them). Without CUDA, where PyTorch's
CPU build raises, they do nothing (no tool reads NVTX markers there), so annotated code runs
unchanged. ``range_push`` returns the nesting depth of the new range (0-based) and
``range_start`` an id, as PyTorch's do.
"""

from __future__ import annotations

import contextlib

from ..backend.xp import cuda_is_available, cupy

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_depth = [0]
_next_id = [0]


def _nvtx():
    """CuPy's NVTX bindings, or None (no CUDA, or a CuPy built without NVTX)."""
    return getattr(cupy().cuda, "nvtx", None) if cuda_is_available() else None


def range_push(msg: str) -> int:
    """Open a nested range named ``msg``; returns its depth."""
    nv = _nvtx()
    if nv is not None:
        nv.RangePush(msg)
    _depth[0] += 1
    return _depth[0] - 1


def range_pop() -> int:
    """Close the innermost range; returns its depth (-1 when none was open)."""
    if _depth[0] == 0:
        return -1
    nv = _nvtx()
    if nv is not None:
        nv.RangePop()
    _depth[0] -= 1
    return _depth[0]


def range_start(msg) -> int:
    """Start a range that may end on another thread; returns its id (for ``range_end``)."""
    _next_id[0] += 1
    range_push(msg)
    return _next_id[0]


def range_end(range_id) -> None:
    """End the range ``range_start`` returned."""
    range_pop()


def mark(msg) -> None:
    """An instantaneous event named ``msg``."""
    nv = _nvtx()
    if nv is not None:
        nv.Mark(msg)


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001 - PyTorch's name
    """``with nvtx.range("step {}", i):`` a range around the block (``msg.format(*args, **kwargs)``)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
