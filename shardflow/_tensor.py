"""``torch._tensor``: the module PyTorch defines ``Tensor`` in (``from torch._tensor import
Tensor`` in type hints and isinstance checks)."""

from .autograd import Tensor  # noqa: F401

__all__ = ["Tensor"]
