"""Comparisons, NaN/inf tests, ``isclose``/``allclose``/``equal``, ``nan_to_num``, logical and
bitwise ops (rounding and rounded division are in ``rounding.py``).

Semantics follow PyTorch: comparisons, ``isnan``/``isinf``/``isfinite`` and logical ops
return bool tensors and are never differentiable; bitwise ops need bool or integer tensors;
``nan_to_num`` passes the gradient where the input was finite.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module, result_type
from ._grad_graph import keep_where
from ._util import (
    _COMPLEX_SCALAR_NAMES,
    _SCALARS,
    _is_float_array,
    as_array,
    as_tensor_arg,
    inplace,
)
from ._util import (
    _broadcast_error_named as _broadcast_error,
)

__all__ = [
    "eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isclose",
    "allclose", "equal", "nan_to_num", "nan_to_num_", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_",
]


def _arr(x):
    return x.array if isinstance(x, Tensor) else x


# ---------------------------------------------------------------------------- comparisons
_ORDERINGS = ("lt", "le", "gt", "ge")


def _refuse_complex_order(name, a, b) -> None:
    """torch's ``"lt_cpu" not implemented for 'ComplexFloat'``: complex numbers have no
    order (NumPy's is lexicographic); named by the complex dtype among the operands."""
    for v in (a, b):
        kind = getattr(getattr(v, "dtype", None), "kind", None)
        if kind == "c" or isinstance(v, complex):
            dt = v.dtype.name if kind == "c" else (
                "complex128" if getattr(a if v is b else b, "dtype", None) == np.float64
                else "complex64")
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{_COMPLEX_SCALAR_NAMES[dt]}'")


def _compare(name, ufunc, aliases=()):
    def fn(input, other):
        a = _arr(input)
        b = _arr(other)
        if name in _ORDERINGS:
            _refuse_complex_order(name, a, b)
        try:
            return _wrap(as_array(ufunc(a, b)))
        except ValueError:
            raise _broadcast_error(name, a, b) from None
        except TypeError:
            if isinstance(b, list | tuple):
                return fn(input, as_tensor_arg(b, "other"))
            raise

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: elementwise comparison with a Tensor or number -> bool."
    return register(name, *aliases)(fn)


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal, ("not_equal",))
lt = _compare("lt", np.less, ("less",))
le = _compare("le", np.less_equal, ("less_equal",))
gt = _compare("gt", np.greater, ("greater",))
ge = _compare("ge", np.greater_equal, ("greater_equal",))
not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


def _predicate(name, f):
    def fn(input):
        x = input if isinstance(input, Tensor) else as_tensor_arg(input)
        return _wrap(as_array(f(x.array)))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: elementwise test -> bool tensor."
    return register(name)(fn)


def _nan_test(f, int_value):
    def g(a):
        if a.dtype.kind in "biu":
            return get_array_module(a).full(a.shape, int_value)
        return f(a)

    return g


isnan = _predicate("isnan", _nan_test(np.isnan, False))
isinf = _predicate("isinf", _nan_test(np.isinf, False))
isposinf = _predicate("isposinf", _nan_test(np.isposinf, False))
isneginf = _predicate("isneginf", _nan_test(np.isneginf, False))
isfinite = _predicate("isfinite", _nan_test(np.isfinite, True))


@register("isclose")
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` (or exactly equal), elementwise -> bool."""
    a, b = _arr(input), _arr(other)
    if isinstance(input, Tensor) and isinstance(other, Tensor) and a.dtype != b.dtype:
        raise RuntimeError(
            f"isclose: {input.dtype} did not match {other.dtype}; cast one of them with .to()"
        )
    if a.dtype.kind == "V" or getattr(b, "dtype", np.dtype("f8")).kind == "V":
        a, b = (v.astype(np.float32) if hasattr(v, "dtype") else v for v in (a, b))
    return _wrap(as_array(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@register("allclose")
def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element is ``isclose`` (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).array.all())


@register("equal")
def equal(input, other) -> bool:
    """True when both tensors have the same shape and the same elements (a Python bool)."""
    a, b = _arr(input), _arr(other)
    return a.shape == b.shape and bool(np.array_equal(a, b))


class NanToNum(Function):
    """Replace NaN/+inf/-inf with numbers; grad passes where the input was finite."""

    save_inputs = (0,)

    def forward(self, x, nan=0.0, posinf=None, neginf=None):
        self.x = x
        if x.dtype.kind == "V":  # bfloat16: np.nan_to_num leaves non-NumPy float dtypes untouched
            fi = ml_dtypes.finfo(x.dtype)
            posinf = float(fi.max) if posinf is None else posinf
            neginf = float(fi.min) if neginf is None else neginf
            y = np.nan_to_num(x.astype(np.float32), nan=nan, posinf=posinf, neginf=neginf)
            return y.astype(x.dtype)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, g):
        return g * np.isfinite(self.x)

    def backward_graph(self, g):
        return keep_where(g, np.isfinite(self.x))  # linear in g, the finite mask fixed


@register("nan_to_num")
def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf/-inf -> ``posinf``/``neginf`` (default: the dtype's max/min)."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if not _is_float_array(x.array):
        return _wrap(x.array.copy())
    return NanToNum.apply(x, nan=nan, posinf=posinf, neginf=neginf)


@register("nan_to_num_")
def nan_to_num_(input, nan: float = 0.0, posinf=None, neginf=None):
    return inplace(input, nan_to_num(input, nan, posinf, neginf))


# ---------------------------------------------------------------------------- logical
def _logical(name, ufunc):
    def fn(input, other):
        a, b = _arr(input), _arr(other)
        try:
            return _wrap(as_array(ufunc(a, b)))
        except ValueError:
            raise _broadcast_error(name, a, b) from None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: nonzero elements count as True -> bool tensor."
    return register(name)(fn)


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


@register("logical_not")
def logical_not(input):
    """``torch.logical_not``: True where the element is zero -> bool tensor."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    return _wrap(np.logical_not(x.array))


# ---------------------------------------------------------------------------- bitwise
class _BitwiseDtypeError(NotImplementedError, TypeError):
    """A bitwise op on a float tensor: torch's NotImplementedError ("bitwise_and_cpu" not
    implemented for 'Float'; a RuntimeError), and the TypeError that ``~x`` raises in torch
    and that shardflow raised for all of them."""


def _no_float_kernel(name: str, v: Tensor) -> _BitwiseDtypeError:
    from .index import _dtype_name

    return _BitwiseDtypeError(f'"{name}_cpu" not implemented for \'{_dtype_name(v.array)}\': bitwise ops are '
                              f"defined for bool or integer tensors only (use logical_* for masks)")


def _bitwise_dtype(name, input, other):
    ops = []
    for v in (input, other):
        if isinstance(v, Tensor):
            if v.array.dtype.kind not in "biu":
                raise _no_float_kernel(name, v)
            ops.append((v.dtype, v.array.ndim))
        elif isinstance(v, _SCALARS) and not isinstance(v, float | np.floating):
            ops.append(v)
        else:
            raise TypeError(f"{name}: expected a Tensor or an int/bool, got {type(v).__name__}")
    return result_type(ops).np


def _bitwise(name, ufunc):
    def fn(input, other):
        d = _bitwise_dtype(name, input, other)
        a, b = _arr(input), _arr(other)
        # numbers become NumPy scalars of d (CuPy takes those, not 0-d NumPy arrays)
        a = a.astype(d, copy=False) if hasattr(a, "dtype") else d.type(a)
        b = b.astype(d, copy=False) if hasattr(b, "dtype") else d.type(b)
        try:
            return _wrap(as_array(ufunc(a, b)))
        except ValueError:
            raise _broadcast_error(name, a, b) from None

    def fn_(input, other):
        r = fn(input, other)
        if r.array.dtype != input.array.dtype:
            raise RuntimeError(
                f"{name}_: result type {r.dtype} can't be cast to the desired output type "
                f"{input.dtype}"
            )
        return inplace(input, r)

    fn.__name__ = fn.__qualname__ = name
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn.__doc__ = f"``torch.{name}`` on bool/integer tensors (``&``, ``|``, ``^`` operators)."
    fn_.__doc__ = f"In-place ``{name}``."
    return register(name)(fn), register(name + "_")(fn_)


bitwise_and, bitwise_and_ = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or, bitwise_or_ = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor, bitwise_xor_ = _bitwise("bitwise_xor", np.bitwise_xor)


@register("bitwise_not")
def bitwise_not(input):
    """``~x``: logical not on bool tensors, two's-complement inversion on integers."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if x.array.dtype.kind not in "biu":
        raise _no_float_kernel("bitwise_not", x)
    return _wrap(np.invert(x.array))


@register("bitwise_not_")
def bitwise_not_(input):
    return inplace(input, bitwise_not(input))
