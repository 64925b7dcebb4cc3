"""``torch.nn.attention``'s path: ``sdpa_kernel`` and ``SDPBackend``.

PyTorch picks one of several scaled-dot-product-attention kernels (math, flash, memory
efficient, cuDNN) and ``sdpa_kernel(backends)`` restricts that choice for a block. shardflow
has one SDPA implementation per device (``ops/attention.py``), so the choice is accepted and
changes nothing: every backend gives the same results here (PyTorch's kernels agree up to
rounding too). The argument is checked as PyTorch checks it.
"""

from __future__ import annotations

import enum
from contextlib import contextmanager

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.Enum):
    """PyTorch's SDPA backends, with its values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Accepts the backends PyTorch accepts (an ``SDPBackend`` or a list of them); no effect
    (module docstring)."""
    items = backends if isinstance(backends, list) else [backends]
    for b in items:
        if not isinstance(b, SDPBackend):
            raise AssertionError(
                "Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                f"got {type(b).__name__}"
            )
    yield
