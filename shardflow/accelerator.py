"""``torch.accelerator``: the device-agnostic questions a script asks about its accelerator.

shardflow's only accelerator is CUDA through CuPy (``backend/xp.py`` imports CuPy, lazily).
On a machine without CuPy or without an NVIDIA GPU the answers are PyTorch's on a CPU-only
build: ``is_available()`` False, ``current_accelerator()`` None, ``device_count()`` 0, and
every call that needs a device (``current_device_index``, ``synchronize``,
``empty_cache``, memory queries ...) raises the RuntimeError PyTorch raises, with the fix.
With a GPU the calls go to CuPy's current device and its default memory pool.
"""

from __future__ import annotations

from .backend import device as _device
from .backend.xp import cuda_is_available, cupy

__all__ = [
    "is_available", "current_accelerator", "device_count", "current_device_index",
    "current_device_idx", "set_device_index", "set_device_idx", "device_index", "synchronize",
    "empty_cache", "get_device_capability", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "get_memory_info",
]

_NO_DEVICE = (
    "Cannot access accelerator device when none is available. (shardflow: no CUDA device "
    "is visible; its accelerator is CUDA through CuPy. Check shardflow.accelerator.is_available() "
    "first and run on device='cpu', or install cupy-cuda12x on a machine with an NVIDIA GPU.)"
)


def is_available() -> bool:
    """True when a CUDA device is usable (CuPy installed and a GPU visible)."""
    return cuda_is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device('cuda')`` when CUDA is available, else None (shardflow knows no other kind)."""
    return _device("cuda") if cuda_is_available() else None


def device_count() -> int:
    return int(cupy().cuda.runtime.getDeviceCount()) if cuda_is_available() else 0


def _require():
    if not cuda_is_available():
        raise RuntimeError(_NO_DEVICE)
    return cupy()


def _index(device) -> int:
    if device is None:
        return int(_require().cuda.runtime.getDevice())
    if isinstance(device, int):
        return device
    d = _device(device)
    return d.index or 0


def current_device_index() -> int:
    return int(_require().cuda.runtime.getDevice())


def set_device_index(device, /) -> None:
    _require().cuda.runtime.setDevice(_index(device))


current_device_idx = current_device_index  # PyTorch's deprecated spellings
set_device_idx = set_device_index


class device_index:
    """``with device_index(i):`` runs the block with device ``i`` current (None: no change)."""

    def __init__(self, device, /):
        self.idx, self.prev = device, None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False


def synchronize(device=None, /) -> None:
    """Wait for all work queued on the device."""
    cp = _require()
    with cp.cuda.Device(_index(device)):
        cp.cuda.Device().synchronize()


def empty_cache() -> None:
    """Release the cached blocks of CuPy's memory pool."""
    _require().get_default_memory_pool().free_all_blocks()


def get_device_capability(device=None, /) -> dict:
    cp = _require()
    major, minor = divmod(int(cp.cuda.Device(_index(device)).compute_capability), 10)
    return {"major": major, "minor": minor}


def memory_allocated(device_index=None, /) -> int:
    _index(device_index)
    return int(_require().get_default_memory_pool().used_bytes())


def memory_reserved(device_index=None, /) -> int:
    _index(device_index)
    return int(_require().get_default_memory_pool().total_bytes())


def max_memory_allocated(device_index=None, /) -> int:
    """CuPy keeps no peak statistic: the current allocation is returned (a lower bound)."""
    return memory_allocated(device_index)


def max_memory_reserved(device_index=None, /) -> int:
    return memory_reserved(device_index)


def reset_peak_memory_stats(device_index=None, /) -> None:
    _require()


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the device."""
    cp = _require()
    with cp.cuda.Device(_index(device_index)):
        free, total = cp.cuda.runtime.memGetInfo()
    return int(free), int(total)
