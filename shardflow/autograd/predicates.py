"""Type predicates with PyTorch's names: ``is_tensor``, ``is_floating_point``, ``is_complex``."""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["is_tensor", "is_floating_point", "is_complex"]


def is_tensor(obj) -> bool:
    """True if ``obj`` is a shardflow Tensor (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


def _check(input, name: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_floating_point(input) -> bool:
    """True for float16/bfloat16/float32/float64 tensors."""
    return _check(input, "is_floating_point").is_floating_point()


def is_complex(input) -> bool:
    """True for complex tensors (shardflow has no complex dtypes, so always False today)."""
    return _check(input, "is_complex").is_complex()
