"""Host memory that Python's ``tracemalloc`` would not see, reported to it.

``tracemalloc`` counts what passes through Python's allocators and what NumPy reports for its
arrays' data (NumPy calls ``PyTraceMalloc_Track`` in its domain 389047). Memory shardflow
maps itself is invisible to it: ``fully_shard``'s gathered parameters live in an anonymous
``mmap`` per unit whose pages are given back with ``madvise`` between uses
(``distributed/fsdp/_param_group.py``), so a ``tracemalloc`` measurement of a ZeRO-2/3 step
(``shardflow bench planner``, a user's own) missed every gathered unit: ZeRO-2, which keeps
the whole gathered model from forward into backward, measured the same peak as ZeRO-3.

:class:`TracedRegions` reports such memory to ``tracemalloc`` in shardflow's own domain
(:data:`DOMAIN`; ``tracemalloc.DomainFilter`` separates it): ``track(array)`` when its pages
become resident, ``untrack(array)`` when they are given back. Both are a no-op while
``tracemalloc`` is not tracing (one C call to ask), so the cost off a measurement is nil.
"""

from __future__ import annotations

import ctypes
import tracemalloc

__all__ = ["DOMAIN", "TracedRegions"]

DOMAIN = 0x5F5F  # shardflow's tracemalloc domain (NumPy's is 389047, Python's own 0)

_track = ctypes.pythonapi.PyTraceMalloc_Track
_track.argtypes = (ctypes.c_uint, ctypes.c_size_t, ctypes.c_size_t)
_track.restype = ctypes.c_int
_untrack = ctypes.pythonapi.PyTraceMalloc_Untrack
_untrack.argtypes = (ctypes.c_uint, ctypes.c_size_t)
_untrack.restype = ctypes.c_int


class TracedRegions:
    """The regions (address -> bytes) one owner has reported to ``tracemalloc``."""

    __slots__ = ("_live",)

    def __init__(self):
        self._live: dict[int, int] = {}

    def track(self, arr) -> None:
        """Report ``arr``'s bytes (a host NumPy array over memory NumPy does not own) as
        allocated (``tracemalloc`` replaces a trace at the same address: reporting it again
        counts it once)."""
        if not tracemalloc.is_tracing() or arr.nbytes == 0:
            return
        ptr = arr.ctypes.data
        if _track(DOMAIN, ptr, arr.nbytes) == 0:
            self._live[ptr] = arr.nbytes

    def untrack(self, arr) -> None:
        """Report ``arr``'s bytes as freed (if they were reported)."""
        if self._live:
            ptr = arr.ctypes.data
            if self._live.pop(ptr, None) is not None:
                _untrack(DOMAIN, ptr)

    def untrack_all(self) -> None:
        for ptr in self._live:
            _untrack(DOMAIN, ptr)
        self._live.clear()

    def __len__(self) -> int:
        return len(self._live)
