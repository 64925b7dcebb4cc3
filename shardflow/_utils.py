"""``torch._utils``: the helpers programs import from PyTorch's private utilities."""

from __future__ import annotations

from .backend.user_warning import warn_at_caller
from .compiler import is_compiling as _is_compiling

__all__ = ["is_compiling"]


def is_compiling() -> bool:
    """``torch.compiler.is_compiling()``, with torch's deprecation warning for this path."""
    warn_at_caller("`torch._utils.is_compiling` is deprecated. Use `torch.compiler.is_compiling` instead.")
    return _is_compiling()
