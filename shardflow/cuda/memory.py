"""``torch.cuda`` memory statistics beyond ``memory_allocated`` / ``memory_reserved``.

With CUDA the figures come from CuPy's default memory pool (``used_bytes`` = allocated,
``total_bytes`` = reserved; CuPy keeps no peaks, so a peak is the current figure, as
``max_memory_allocated`` in ``cuda/__init__.py`` documents). Without CUDA ``memory_stats()`` is
empty, as in PyTorch's CPU build; the resets and ``memory_snapshot`` need CUDA
(``CudaNotAvailableError``). The ``*_cached`` names are PyTorch's deprecated spellings (same
``FutureWarning``).
"""

from __future__ import annotations

import collections
import warnings

from ..backend.xp import cuda_is_available

__all__ = ["memory_stats", "memory_stats_as_nested_dict", "memory_summary", "memory_snapshot",
           "memory_cached", "max_memory_cached", "reset_max_memory_allocated",
           "reset_max_memory_cached", "reset_accumulated_memory_stats",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "list_gpu_processes", "ipc_collect", "host_memory_stats", "host_memory_stats_as_nested_dict",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"]

_fraction: dict[int, float] = {}


def _cuda():
    from .. import cuda

    return cuda


def memory_stats(device=None) -> collections.OrderedDict:
    """PyTorch's flat statistics dict (the keys CuPy can answer); empty without CUDA."""
    if not cuda_is_available():
        return collections.OrderedDict()
    c = _cuda()
    allocated, reserved = c.memory_allocated(device), c.memory_reserved(device)
    stats = {"allocated_bytes.all.current": allocated, "allocated_bytes.all.peak": allocated,
             "reserved_bytes.all.current": reserved, "reserved_bytes.all.peak": reserved,
             "active_bytes.all.current": allocated, "active_bytes.all.peak": allocated,
             "num_alloc_retries": 0, "num_ooms": 0}
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` with its dotted keys as nested dicts."""
    out: dict = {}
    for key, value in memory_stats(device).items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A short table of ``memory_stats``."""
    stats = memory_stats(device)
    if not stats:
        return "shardflow.cuda.memory_summary: no CUDA device (CPU tensors are NumPy arrays)\n"
    lines = ["|" + "=" * 60 + "|", "|  shardflow CUDA memory summary (CuPy memory pool)" + " " * 10 + "|"]
    lines += [f"|  {k:<40}{v:>18}|" for k, v in stats.items()]
    return "\n".join(lines + ["|" + "=" * 60 + "|"]) + "\n"


def memory_snapshot(mempool_id=None) -> list:
    """Needs CUDA; an empty list (CuPy exposes no segment list)."""
    _cuda()._require("memory_snapshot()")
    return []


def memory_cached(device=None) -> int:
    """Deprecated: ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return _cuda().memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated: ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
                  FutureWarning, stacklevel=2)
    return _cuda().max_memory_reserved(device)


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated: ``reset_peak_memory_stats``."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    _cuda().reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: ``reset_peak_memory_stats``."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    _cuda().reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Needs CUDA; nothing is accumulated (CuPy counts no allocations)."""
    _cuda()._require("reset_accumulated_memory_stats()")


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap CuPy's memory pool at ``fraction`` of the device's memory."""
    cp = _cuda()._require("set_per_process_memory_fraction()")
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    cp.get_default_memory_pool().set_limit(fraction=fraction)
    _fraction[int(cp.cuda.runtime.getDevice())] = fraction


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction last set (1.0 when none was)."""
    cp = _cuda()._require("get_per_process_memory_fraction()")
    return _fraction.get(int(cp.cuda.runtime.getDevice()), 1.0)


def list_gpu_processes(device=None) -> str:
    """PyTorch reads this from NVML; shardflow does not use NVML."""
    return "shardflow.cuda.list_gpu_processes: not available (shardflow does not use NVML)"


def ipc_collect() -> None:
    """Needs CUDA; nothing to collect (shardflow shares no CUDA memory between processes)."""
    _cuda()._require("ipc_collect()")


def host_memory_stats() -> collections.OrderedDict:
    """Pinned host memory statistics: empty (shardflow keeps no pinned-memory allocator
    statistics; PyTorch's CPU build answers the same)."""
    return collections.OrderedDict()


def host_memory_stats_as_nested_dict() -> dict:
    """``host_memory_stats`` nested (empty)."""
    return {}


def reset_accumulated_host_memory_stats() -> None:
    """Nothing accumulated."""


def reset_peak_host_memory_stats() -> None:
    """Nothing recorded."""
