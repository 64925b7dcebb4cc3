"""Padding layers (``torch.nn.modules.padding``): ``ConstantPad{1,2,3}d``, ``ZeroPad*``,
``ReflectionPad*``, ``ReplicationPad*``, ``CircularPad*`` over ``F.pad``.

``padding`` is an int (the same on every side of the last ``n`` dims) or a ``2n``-tuple
``(left, right, top, bottom, front, back)`` in ``F.pad``'s order: last dim first. ``F.pad``
checks the input, as in PyTorch: reflection, replication and circular pads take batched
``(N, C, *spatial)`` or unbatched ``(C, *spatial)`` input (a reflection pad must be smaller
than its dim); constant pads take any tensor with at least ``n`` dims.
"""

from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = [
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d",
]


def _padding(padding, n: int, name: str) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n or not all(isinstance(p, int) for p in padding):
        raise ValueError(f"{name}: padding must be an int or a tuple of {2 * n} ints, got {padding!r}")
    return padding


class _PadNd(Module):
    n: int = 1
    mode: str = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _padding(padding, self.n, type(self).__name__)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"



class ConstantPad1d(_ConstantPadNd):
    """``F.pad(input, padding, value=value)`` over the last 1 dim."""

    n = 1


class ConstantPad2d(_ConstantPadNd):
    """``F.pad(input, padding, value=value)`` over the last 2 dims."""

    n = 2


class ConstantPad3d(_ConstantPadNd):
    """``F.pad(input, padding, value=value)`` over the last 3 dims."""

    n = 3


class ZeroPad1d(_ZeroPadNd):
    """``F.pad(input, padding)`` over the last 1 dim."""

    n = 1


class ZeroPad2d(_ZeroPadNd):
    """``F.pad(input, padding)`` over the last 2 dims."""

    n = 2


class ZeroPad3d(_ZeroPadNd):
    """``F.pad(input, padding)`` over the last 3 dims."""

    n = 3


class _ReflectionPadNd(_PadNd):
    """torch's base of ``ReflectionPad1d/2d/3d`` (for ``isinstance`` checks)."""

    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    """torch's base of ``ReplicationPad1d/2d/3d``."""

    mode = "replicate"


class _CircularPadNd(_PadNd):
    """torch's base of ``CircularPad1d/2d/3d``."""

    mode = "circular"


class ReflectionPad1d(_ReflectionPadNd):
    """``F.pad(input, padding, 'reflect')`` over the last 1 dim."""

    n = 1
    mode = "reflect"


class ReflectionPad2d(_ReflectionPadNd):
    """``F.pad(input, padding, 'reflect')`` over the last 2 dims."""

    n = 2
    mode = "reflect"


class ReflectionPad3d(_ReflectionPadNd):
    """``F.pad(input, padding, 'reflect')`` over the last 3 dims."""

    n = 3
    mode = "reflect"


class ReplicationPad1d(_ReplicationPadNd):
    """``F.pad(input, padding, 'replicate')`` over the last 1 dim."""

    n = 1
    mode = "replicate"


class ReplicationPad2d(_ReplicationPadNd):
    """``F.pad(input, padding, 'replicate')`` over the last 2 dims."""

    n = 2
    mode = "replicate"


class ReplicationPad3d(_ReplicationPadNd):
    """``F.pad(input, padding, 'replicate')`` over the last 3 dims."""

    n = 3
    mode = "replicate"


class CircularPad1d(_CircularPadNd):
    """``F.pad(input, padding, 'circular')`` over the last 1 dim."""

    n = 1
    mode = "circular"


class CircularPad2d(_CircularPadNd):
    """``F.pad(input, padding, 'circular')`` over the last 2 dims."""

    n = 2
    mode = "circular"


class CircularPad3d(_CircularPadNd):
    """``F.pad(input, padding, 'circular')`` over the last 3 dims."""

    n = 3
    mode = "circular"
