"""``torch.backends.nnpack``: ``is_available()`` False (shardflow calls no NNPACK kernel), and
torch's ``set_flags(enabled)`` / ``flags(enabled=False)`` switch, kept and read back, changing
no result."""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "flags", "set_flags"]

_enabled = [True]  # torch's default


def is_available() -> bool:
    return False


def set_flags(_enabled_value):
    """Set the switch; returns the previous ``(enabled,)``, as torch's."""
    previous = (_enabled[0],)
    _enabled[0] = bool(_enabled_value)
    return previous


@contextlib.contextmanager
def flags(enabled=False):
    """The switch set inside a ``with`` block and restored after."""
    previous = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(previous[0])
