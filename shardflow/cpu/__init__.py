"""``torch.cpu``: the CPU device namespace (layer L6, beside ``shardflow.cuda``).

Only ``amp`` (PyTorch's deprecated ``torch.cpu.amp.autocast`` / ``GradScaler`` spellings) and
the small device queries scripts call (``is_available``, ``device_count``, ``synchronize``,
``current_device``) are here.
"""

from __future__ import annotations

from . import amp

__all__ = ["amp", "is_available", "device_count", "synchronize", "current_device"]


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
