"""Type predicates and tensor facts with PyTorch's names: ``is_tensor``, ``is_floating_point``,
``is_complex``, ``is_nonzero``, ``is_same_size``, ``is_signed``, ``numel``, ``typename``,
``result_type``, ``can_cast`` (``is_nonzero``, ``is_same_size``, ``is_signed`` are Tensor
methods too)."""

from __future__ import annotations

from ..backend import dtypes
from .dispatch import register
from .tensor import Tensor

__all__ = ["is_tensor", "is_floating_point", "is_complex", "is_nonzero", "is_same_size", "is_signed", "numel",
           "typename", "result_type", "can_cast"]


def is_tensor_like(inp) -> bool:
    """torch.autograd.is_tensor_like: a Tensor, or an object with ``__torch_function__``."""
    return isinstance(inp, Tensor) or hasattr(inp, "__torch_function__")


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


@register("is_nonzero")
def is_nonzero(input) -> bool:
    """The truth of a one-element tensor (PyTorch's errors for none or several elements)."""
    n = _check(input, "is_nonzero").numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@register("is_same_size")
def is_same_size(input, other) -> bool:
    return tuple(_check(input, "is_same_size").shape) == tuple(other.shape)


@register("is_signed")
def is_signed(input) -> bool:
    """False for uint8 and bool, True for the other dtypes."""
    return _check(input, "is_signed").dtype.is_signed


def numel(input) -> int:
    return _check(input, "numel").numel()


def _assert(condition, message) -> None:
    """``torch._assert``: Python's ``assert condition, message`` as a function (torchvision's
    VisionTransformer checks its input shape with it). Deviation: torch records the call as one
    node when ``torch.fx`` traces a condition computed from the input; shardflow's tracer
    raises TraceError on such a condition (it is a Python truth test there)."""
    assert condition, message


def typename(obj) -> str:
    """``'torch.FloatTensor'`` for a tensor (as ``Tensor.type()``), else the object's type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    t = type(obj)
    module = "" if t.__module__ in ("builtins", "__main__") else t.__module__ + "."
    return module + t.__qualname__


def _operand(x):
    if isinstance(x, Tensor):
        return (x.dtype, x.ndim)
    return x


def result_type(tensor1, tensor2) -> dtypes.dtype:
    """The dtype PyTorch's promotion gives an op on these two operands (tensors or numbers)."""
    return dtypes.result_type([_operand(tensor1), _operand(tensor2)])


def can_cast(from_, to) -> bool:
    """Whether PyTorch's type promotion allows casting ``from_`` to ``to`` (no narrowing of
    the category: float -> int, int -> bool and float -> bool are refused)."""
    a, b = dtypes.as_dtype(from_), dtypes.as_dtype(to)
    return a._category <= b._category
