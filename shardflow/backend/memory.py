"""Host allocator tuning for NumPy-heavy training loops.

glibc serves every allocation above ``M_MMAP_THRESHOLD`` (128 KiB by default, adapted
upward only after a free) with a fresh ``mmap`` and returns it with ``munmap`` on free, so
each large temporary an op makes pays page faults on first touch. A training step makes
hundreds of multi-megabyte temporaries; measured here (2 cores), keeping them in the heap
cut a GPT-mini step from ~512 to ~464 ms and the benchmark CNN step from ~125 to ~81 ms.

``tune_allocator()`` raises the mmap threshold to its maximum (32 MiB on 64-bit) and keeps
freed memory in the heap (trim threshold 256 MiB). It changes process-wide state, so it is
never called on import: the ``shardflow`` command, the benchmarks and the training job call
it, ``shardflow run`` gives every rank the same settings through glibc's environment
variables, and the first ``backward()`` of any other process calls ``tune_on_first_use()``
(a plain ``python train.py`` paid 10% of a GPT-mini step and 44% of the benchmark CNN's in
page faults without it; ``SHARDFLOW_TUNE_ALLOCATOR=0`` opts out). A user script may also
call ``shardflow.backend.tune_allocator()`` itself. It is a no-op off glibc.
"""

from __future__ import annotations

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's maximum on 64-bit (4 * 1024 * 1024 * sizeof(long))
TRIM_THRESHOLD = 256 * 1024 * 1024
TOP_PAD = 64 * 1024 * 1024

_done = [False]
_tried = [False]  # tune_on_first_use: one attempt per process, whatever its outcome


def tune_allocator() -> bool:
    """Keep large temporaries in the malloc heap; True if glibc accepted the settings."""
    if _done[0]:
        return True
    import ctypes  # here, not at import

    try:
        # the process's own symbols, where the C library's are: 0.04 ms, where
        # ctypes.util.find_library("c") runs ldconfig in a subprocess (6 ms)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc (macOS, Windows): nothing to tune
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    ok = bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and ok
    ok = bool(mallopt(_M_TOP_PAD, TOP_PAD)) and ok
    _done[0] = ok
    return ok


def tune_on_first_use() -> None:
    """``tune_allocator()`` once per process unless ``SHARDFLOW_TUNE_ALLOCATOR=0``: called by
    the first ``backward()`` (a training loop's), never on import."""
    if _tried[0]:
        return
    from .._config import tune_allocator_on_backward

    wanted = tune_allocator_on_backward()  # a bad value raises here, at every backward
    _tried[0] = True
    if wanted:
        tune_allocator()
