"""A failed host allocation as PyTorch reports it.

NumPy raises ``numpy._core._exceptions._ArrayMemoryError`` (a ``MemoryError``) when an array
cannot be allocated; PyTorch's CPU allocator raises a ``RuntimeError`` ("DefaultCPUAllocator:
can't allocate memory: you tried to allocate N bytes. Error code 12 (Cannot allocate
memory)"). Programs written for PyTorch catch ``RuntimeError`` around a step to retry with a
smaller batch, so the op dispatcher (``autograd/dispatch.py``) re-raises NumPy's error as
:class:`CPUOutOfMemoryError`: a ``RuntimeError`` with torch's words, and still a
``MemoryError`` for code that catches that. Only NumPy's allocation error is converted: it
carries the shape and dtype asked for; any other ``MemoryError`` (CuPy's, a Python one)
passes through unchanged.

Sizes whose byte count does not fit in an int64 never reach the allocator: NumPy raises
``ValueError("array is too big; ...")`` where torch raises ``RuntimeError("Storage size
calculation overflowed with sizes=[...]")``; :func:`as_torch_overflow` makes that
:class:`StorageSizeOverflowError` (both types).
"""

from __future__ import annotations

__all__ = ["CPUOutOfMemoryError", "StorageSizeOverflowError", "as_torch_oom", "as_torch_overflow"]


class CPUOutOfMemoryError(RuntimeError, MemoryError):
    """A host (CPU) allocation failed: torch's ``RuntimeError`` (module docstring)."""


def _human(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # not reached


def as_torch_oom(err: MemoryError, op: str | None = None) -> BaseException:
    """``err`` as :class:`CPUOutOfMemoryError` when it is NumPy's allocation failure, else
    ``err`` itself."""
    if isinstance(err, CPUOutOfMemoryError):
        return err
    shape, dtype = getattr(err, "shape", None), getattr(err, "dtype", None)
    nbytes = getattr(err, "_total_size", None)
    if shape is None or dtype is None or not isinstance(nbytes, int):
        return err
    where = f" in op '{op}'" if op else ""
    return CPUOutOfMemoryError(
        f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. "
        f"Error code 12 (Cannot allocate memory) ({_human(nbytes)} for an array of shape "
        f"{tuple(shape)} and dtype {dtype}{where}: more than this process may allocate. Use a "
        "smaller batch or shape, or check the sizes passed)")


class StorageSizeOverflowError(RuntimeError, ValueError):
    """Sizes whose storage would not fit in an int64 of bytes: torch's ``RuntimeError``."""


_TOO_BIG = "array is too big"


def as_torch_overflow(err: ValueError, op: str | None = None) -> BaseException:
    """``err`` as :class:`StorageSizeOverflowError` when it is NumPy's "array is too big",
    else ``err`` itself."""
    if isinstance(err, StorageSizeOverflowError) or not str(err).startswith(_TOO_BIG):
        return err
    where = f" in op '{op}'" if op else ""
    return StorageSizeOverflowError(
        f"Storage size calculation overflowed{where}: the number of elements times the element "
        f"size does not fit in 64 bits (NumPy: {err}). Check the sizes passed")
