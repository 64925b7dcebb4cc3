"""``torch.cuda.profiler``: ``start()`` / ``stop()`` (``cudaProfilerStart`` / ``Stop``: limit what
Nsight Systems / nvprof record with ``--capture-range=cudaProfilerApi``) and ``profile()``, a
``with`` block between them. With CUDA they go to CuPy's ``cupy.cuda.profiler``; without,
they raise as a CUDA-less torch does, saying to guard them."""

from __future__ import annotations

import contextlib

__all__ = ["start", "stop", "profile"]


def _cupy(what: str):
    from . import _require  # the package's check (it imports this module while it loads)

    return _require(what)


def start() -> None:
    _cupy("profiler.start()").cuda.profiler.start()


def stop() -> None:
    _cupy("profiler.stop()").cuda.profiler.stop()


@contextlib.contextmanager
def profile():
    """Profile the ``with`` block (start before, stop after, also on an exception)."""
    start()
    try:
        yield
    finally:
        stop()
