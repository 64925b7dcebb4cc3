"""``torch.cpu``'s device-agnostic stream and event stand-ins (PyTorch's own CPU classes: every
CPU op has finished when it returns, so there is nothing to wait for) and
``get_capabilities()``."""

from __future__ import annotations

import functools
import os
import platform
from contextlib import AbstractContextManager
from types import MappingProxyType

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "get_capabilities"]


class Stream:
    """PyTorch's ``torch.cpu.Stream``: exists so that device-agnostic code runs."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """PyTorch's ``torch.cpu.Event``: always complete (no ``elapsed_time``, as PyTorch's)."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_default_cpu_stream = Stream()
_current = [_default_cpu_stream]


def current_stream(device=None) -> Stream:
    """The selected CPU stream (``device`` is ignored)."""
    return _current[0]


class StreamContext(AbstractContextManager):
    """``with StreamContext(s):`` selects ``s`` inside the block (None: does nothing)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self):
        if self.stream is None:
            return
        self.prev_stream = _current[0]
        _current[0] = self.stream

    def __exit__(self, type, value, traceback) -> None:
        if self.stream is not None:
            _current[0] = self.prev_stream


def stream(stream: Stream) -> AbstractContextManager:
    """``StreamContext(stream)``."""
    return StreamContext(stream)


# PyTorch's capability name -> the Linux /proc/cpuinfo flag (x86)
_X86_FLAGS = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4_1": "sse4_1",
    "sse4_2": "sse4_2", "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "avx_vnni": "avx_vnni",
    "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq", "avx512_bw": "avx512bw",
    "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma", "avx512_vbmi": "avx512vbmi",
    "avx512_vbmi2": "avx512_vbmi2", "avx512_bitalg": "avx512_bitalg",
    "avx512_vpopcntdq": "avx512_vpopcntdq", "avx512_vnni": "avx512_vnni", "avx512_bf16": "avx512_bf16",
    "avx512_fp16": "avx512_fp16", "avx512_vp2intersect": "avx512_vp2intersect",
    "avx512_4vnniw": "avx512_4vnniw", "avx512_4fmaps": "avx512_4fmaps", "amx_bf16": "amx_bf16",
    "amx_tile": "amx_tile", "amx_int8": "amx_int8", "amx_fp16": "amx_fp16", "fma3": "fma",
    "fma4": "fma4", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "popcnt": "popcnt", "lzcnt": "abm",
    "aes": "aes", "sha": "sha_ni", "clflush": "clflush", "clflushopt": "clflushopt", "clwb": "clwb",
    "avx_vnni_int8": "avx_vnni_int8", "avx_vnni_int16": "avx_vnni_int16",
    "avx_ne_convert": "avx_ne_convert",
}


def _cpuinfo_flags() -> set[str] | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.lru_cache(None)
def get_capabilities():
    """An immutable mapping of the CPU's features under PyTorch's names (``avx2``,
    ``avx512_f``, ``fma3`` ...), read from ``/proc/cpuinfo`` on x86 Linux, plus
    ``architecture`` and ``num_logical_cores``; elsewhere only those two."""
    caps: dict = {"architecture": platform.machine(), "num_logical_cores": os.cpu_count() or 1}
    flags = _cpuinfo_flags()
    if flags is not None and caps["architecture"] in ("x86_64", "AMD64", "i686", "x86"):
        caps.update({name: flag in flags for name, flag in _X86_FLAGS.items()})
    return MappingProxyType(caps)
