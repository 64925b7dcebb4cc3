"""``torch.mps``: Apple's Metal backend, which shardflow does not have; the answers of a PyTorch
build without MPS, so device-agnostic scripts (``elif torch.backends.mps.is_available(): ...
torch.mps.empty_cache()``) load and take their CPU path.

``is_available()`` False, ``device_count()`` 0, ``manual_seed(seed)`` does nothing (torch's,
without MPS); every call that needs the device (``synchronize``, ``empty_cache``, ``seed``,
``get_rng_state`` / ``set_rng_state``, the memory queries, ``set_per_process_memory_fraction``,
``compile_shader``, ``load_metallib``, ``Event()``) raises torch's RuntimeError ("Cannot
execute ... without MPS backend"), saying to guard it and run on the CPU. ``torch.mps.profiler``
is not provided.
"""

from __future__ import annotations

__all__ = ["compile_shader", "load_metallib", "device_count", "get_rng_state", "manual_seed", "seed",
           "set_rng_state", "synchronize", "empty_cache", "set_per_process_memory_fraction",
           "current_allocated_memory", "driver_allocated_memory", "Event", "recommended_max_memory",
           "is_available"]


def _no_mps(call: str):
    raise RuntimeError(f"Cannot execute {call} without MPS backend. (shardflow has no Metal backend: its devices "
                       "are the CPU and CUDA; guard the call with torch.backends.mps.is_available() and run on "
                       "device='cpu')")


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed without MPS (as torch's): the CPU stream is ``torch.manual_seed``'s."""
    return None


def seed() -> None:
    _no_mps("getDefaultGenerator()")


def get_rng_state(device="mps"):
    _no_mps("getDefaultGenerator()")


def set_rng_state(new_state, device="mps") -> None:
    _no_mps("getDefaultGenerator()")


def synchronize() -> None:
    _no_mps("deviceSynchronize()")


def empty_cache() -> None:
    _no_mps("emptyCache()")


def set_per_process_memory_fraction(fraction) -> None:
    _no_mps("setMemoryFraction()")


def current_allocated_memory() -> int:
    _no_mps("getCurrentAllocatedMemory()")


def driver_allocated_memory() -> int:
    _no_mps("getDriverAllocatedMemory()")


def recommended_max_memory() -> int:
    _no_mps("getRecommendedMaxMemory()")


def compile_shader(source: str):
    _no_mps("compile_shader()")


def load_metallib(path: str):
    _no_mps("load_metallib()")


class Event:
    """An MPS event; cannot be made without the device."""

    def __init__(self, enable_timing: bool = False) -> None:
        _no_mps("mps.Event()")
