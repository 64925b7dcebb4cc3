"""``torch._utils``: the helpers programs import from PyTorch's private utilities."""

from __future__ import annotations

from .compiler import is_compiling  # noqa: F401

__all__ = ["is_compiling"]
