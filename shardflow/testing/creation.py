"""``torch.testing.make_tensor``: a tensor of the given shape and dtype filled with random
values (shardflow's RNG, so ``manual_seed`` makes it reproducible), with PyTorch's rules.

Values are drawn uniformly from ``[low, high)``: defaults ``[-9, 10)`` for integers (``[0,
10)`` for uint8), ``[-9, 9)`` for floating and complex (real and imaginary parts each), ``{False,
True}`` for bool; ``low`` / ``high`` are clamped to the dtype's range, rounded up for integral
dtypes, and refused when NaN, when ``low >= high`` or when the interval misses the dtype's
range. ``noncontiguous=True`` returns every other element of a tensor twice as wide in the
last dimension; ``exclude_zero=True`` replaces zeros by 1 (integral) or the dtype's smallest
normal (floating); ``requires_grad`` is refused for bool and integral dtypes.
"""

from __future__ import annotations

import collections.abc
import functools
import math
import warnings

from ..backend import as_dtype

__all__ = ["make_tensor"]

_INTEGRAL = ("bool", "uint8", "int8", "int16", "int32", "int64")
_FLOATING = ("float16", "bfloat16", "float32", "float64")
_COMPLEX = {"complex64": "float32", "complex128": "float64"}


def _name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A random tensor of ``shape`` and ``dtype`` on ``device`` (module docstring: the rules)."""
    from .. import ops
    from ..backend.info import finfo, iinfo

    dtype = as_dtype(dtype)
    name = _name(dtype)
    floating_or_complex = name in _FLOATING or name in _COMPLEX

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        low = default_low if low is None else low
        high = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
        if low == high and floating_or_complex:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
                          "is deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} "
                             f"only supports [{lowest_inclusive}, {highest_exclusive})")
        low = min(max(low, lowest_inclusive), highest_exclusive)
        high = min(max(high, lowest_inclusive), highest_exclusive)
        if name in _INTEGRAL:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and name in _INTEGRAL:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])

    if name == "bool":
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                                    default_high=2)
        result = ops.randint(low, high, shape, device=device, dtype=dtype)
    elif name in _INTEGRAL:
        info = iinfo(dtype)
        low, high = modify_low_high(low, high, lowest_inclusive=info.min,
                                    highest_exclusive=info.max + (1 if name != "int64" else 0),
                                    default_low=-9, default_high=10)
        result = ops.randint(low, high, shape, device=device, dtype=dtype)
    elif floating_or_complex:
        part = _COMPLEX.get(name, name)
        info = finfo(as_dtype(part))
        low, high = modify_low_high(low, high, lowest_inclusive=info.min, highest_exclusive=info.max,
                                    default_low=-9, default_high=9)

        def uniform():
            t = ops.empty(shape, device=device, dtype=as_dtype(part))
            if high - low >= info.max:  # the width itself would overflow: draw half, double
                return t.uniform_(low / 2, high / 2).mul_(2)
            return t.uniform_(low, high)

        result = ops.complex(uniform(), uniform()) if name in _COMPLEX else uniform()
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). "
                        "To request support, file an issue at: https://github.com/pytorch/pytorch/issues")

    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if name in _INTEGRAL else finfo(as_dtype(_COMPLEX.get(name, name))).tiny
    if floating_or_complex:
        result.requires_grad = requires_grad
    return result
