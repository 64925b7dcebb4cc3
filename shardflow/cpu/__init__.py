"""``torch.cpu``: the CPU device namespace (layer L6, beside ``shardflow.cuda``).

Only ``amp`` (PyTorch's deprecated ``torch.cpu.amp.autocast`` / ``GradScaler`` spellings),
the small device queries scripts call (``is_available``, ``device_count``, ``synchronize``,
``current_device``, ``set_device``, ``is_initialized``) and, in ``streams.py``, PyTorch's
device-agnostic ``Stream`` / ``Event`` / ``stream()`` stand-ins and ``get_capabilities()``
are here.
"""

from __future__ import annotations

from . import amp
from .streams import Event, Stream, StreamContext, current_stream, get_capabilities, stream

__all__ = ["amp", "is_available", "device_count", "synchronize", "current_device", "set_device",
           "is_initialized", "Stream", "Event", "StreamContext", "stream", "current_stream",
           "get_capabilities"]


def is_available() -> bool:
    """Always True (``torch.cpu.is_available``)."""
    return True


def device_count() -> int:
    """1, as ``torch.cpu.device_count()``."""
    return 1


def synchronize(device=None) -> None:
    """Nothing to wait for on the CPU."""


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """Nothing to set: there is one CPU device."""


def is_initialized() -> bool:
    """Always True."""
    return True
