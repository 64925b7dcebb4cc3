"""Rounding and rounded division: floor, ceil, round, trunc/fix, frac, sign/sgn, rounded
division (``div(..., rounding_mode=...)`` via ``_rounded_div``, ``floor_divide``), remainder
and fmod (comparisons, logical and bitwise ops are in ``comparison.py``).

Semantics follow PyTorch:

* Rounding ops keep integer dtypes (returning a copy) and have a zero gradient, except
  ``frac`` (``x - trunc(x)``) whose gradient is ``g``. ``round`` rounds half to even.
* ``div(a, b, rounding_mode='trunc' | 'floor')`` and ``floor_divide`` have zero gradients
  (PyTorch: ``grad * 0``). Integer ``'trunc'`` truncates towards zero (C division);
  ``'floor'`` floors (Python). Integer division by zero raises ``ZeroDivisionError``.
* ``remainder`` has the sign of the divisor (Python ``%``), ``fmod`` the sign of the
  dividend (C ``fmod``); gradients ``da = g``, ``db = -g * div(a, b, rounding_mode=floor or
  trunc)``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.higher_order import first_order_only
from ..backend import get_array_module
from ..backend.fp_errors import enter_quiet, exit_quiet
from ._grad_graph import const, sum_to
from ._util import (
    _broadcast_error_named as _broadcast_error,
)
from ._util import (
    _is_float_array,
    _shape,
    as_dtype_of,
    as_tensor_arg,
    inplace,
    needs_graph,
    promote,
    unbroadcast,
)

__all__ = [
    "floor", "ceil", "round", "trunc", "fix", "frac", "sign", "sgn", "floor_", "ceil_",
    "round_", "trunc_", "fix_", "frac_", "sign_", "floor_divide", "floor_divide_", "remainder",
    "remainder_", "fmod", "fmod_",
]


def _is_float_operand(x) -> bool:
    """An array of a floating dtype, or a Python/NumPy float (no host copy of device data)."""
    return _is_float_array(x) if hasattr(x, "dtype") else isinstance(x, float)


# ---------------------------------------------------------------------------- rounding
class _ZeroGrad(Function):
    """A piecewise-constant op: y = f(x), grad zero (PyTorch returns zeros, not None)."""

    save_inputs = ()

    def forward(self, x, **params):
        return self.f(x, **params)

    def backward(self, g):
        return np.zeros_like(g)

    def backward_graph(self, g):
        # a constant zero: its derivative is zero too (g * 0 would turn an inf g into NaN)
        return const(get_array_module(g.array).zeros_like(g.array))


def _round_array(x, decimals=0):
    if decimals == 0:
        return np.rint(x)
    token = enter_quiet()  # np.round is Python: its FP warnings escape the module filter (fp_errors.py)
    try:
        return np.round(x, decimals)
    finally:
        exit_quiet(token)


Floor = type("Floor", (_ZeroGrad,), {"f": staticmethod(lambda x: np.floor(x))})
Ceil = type("Ceil", (_ZeroGrad,), {"f": staticmethod(lambda x: np.ceil(x))})
Trunc = type("Trunc", (_ZeroGrad,), {"f": staticmethod(lambda x: np.trunc(x))})
Round = type("Round", (_ZeroGrad,), {"f": staticmethod(_round_array)})


def _sign_array(x, out=None):
    """``np.sign`` with PyTorch's sign of NaN, 0 (NumPy gives NaN); complex ``sgn`` keeps
    NumPy's ``x / |x|`` (NaN for a NaN, as torch)."""
    out = np.sign(x, out=out)
    if out.dtype.kind in "fV":  # (bfloat16's kind is V)
        if isinstance(out, np.generic):  # a 0-d input gives a NumPy scalar
            return out.dtype.type(0) if np.isnan(out) else out
        xp = get_array_module(out)
        xp.copyto(out, 0, where=xp.isnan(out))
    return out


Sign = type("Sign", (_ZeroGrad,), {"f": staticmethod(_sign_array)})


class Frac(Function):
    """y = x - trunc(x); dy = g."""

    save_inputs = ()

    def forward(self, x):
        return x - np.trunc(x)

    def backward(self, g):
        return g

    def backward_graph(self, g):
        return g


def _rounding(name, cls, ufunc):
    def fn(input):
        x = input if isinstance(input, Tensor) else as_tensor_arg(input)
        k = x.array.dtype.kind
        if k == "c" and name == "sign":
            raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                      "numbers. Please use torch.sgn instead.")
        if k == "b" or (k in "iu" and name != "sign"):
            return _wrap(x.array.copy())  # integers are already rounded; bool sign is itself
        return cls.apply(x)

    def fn_(input):
        if not needs_graph(input) and input.array.dtype.kind not in "biu":
            a = input.array
            ufunc(a, out=a)
            input._version_counter[0] += 1
            return input
        return inplace(input, fn(input))

    fn.__name__ = fn.__qualname__ = name
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn.__doc__ = f"``torch.{name}``: elementwise, integer dtypes kept, zero gradient."
    fn_.__doc__ = f"In-place ``{name}``."
    return register(name)(fn), register(name + "_")(fn_)


floor, floor_ = _rounding("floor", Floor, np.floor)
ceil, ceil_ = _rounding("ceil", Ceil, np.ceil)
trunc, trunc_ = _rounding("trunc", Trunc, np.trunc)
sign, sign_ = _rounding("sign", Sign, _sign_array)
fix = register("fix")(trunc)
fix_ = register("fix_")(trunc_)


class ComplexSgn(Function):
    """``sgn(z) = z / |z|`` (0 at 0) for complex ``z``; gradient torch's ``sgn_backward``:
    ``(g - s * real(conj(s) * g)) / |z|``, 0 where ``|z| = 0``."""

    save_inputs = ()

    def forward(self, z):
        xp = get_array_module(z)
        r = xp.abs(z)
        self.zero = r == 0
        self.r = xp.where(self.zero, 1, r)
        self.s = xp.where(self.zero, 0, z / self.r).astype(z.dtype, copy=False)
        return self.s

    def backward(self, g):
        xp = get_array_module(g)
        s = self.s
        gz = (g - s * xp.real(s.conjugate() * g)) / self.r
        return xp.where(self.zero, 0, gz).astype(g.dtype, copy=False)

    def backward_graph(self, g):
        return first_order_only(self, g)


@register("sgn")
def sgn(input):
    """``torch.sgn``: ``sign`` for real inputs, ``z / |z|`` for complex ones."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if x.array.dtype.kind == "c":
        return ComplexSgn.apply(x)
    return sign(x)



@register("round")
def round(input, *, decimals: int = 0):
    """Round half to even (``decimals`` digits: scale by 10**decimals, round, unscale)."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if x.array.dtype.kind in "biu" and decimals >= 0:
        return _wrap(x.array.copy())
    return Round.apply(x, decimals=decimals)


@register("round_")
def round_(input, *, decimals: int = 0):
    if decimals == 0 and not needs_graph(input) and input.array.dtype.kind not in "biu":
        a = input.array
        np.rint(a, out=a)
        input._version_counter[0] += 1
        return input
    return inplace(input, round(input, decimals=decimals))


@register("frac")
def frac(input):
    """``x - trunc(x)`` (sign of x); gradient passes through unchanged."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if not _is_float_array(x.array):
        raise RuntimeError(f"frac: expected a floating point tensor, got {x.dtype}; call .float()")
    return Frac.apply(x)


@register("frac_")
def frac_(input):
    return inplace(input, frac(input))


# ---------------------------------------------------------------------------- division
class IntegerDivisionByZero(ZeroDivisionError, RuntimeError):
    """Integer division by zero: PyTorch raises RuntimeError("ZeroDivisionError"); Python code
    catches ZeroDivisionError. Both catch this."""


def _check_int_zero(b, op, a=None):
    if a is not None and 0 in np.broadcast_shapes(_shape(a), _shape(b)):
        return  # an empty result divides nothing (torch returns it)
    nonzero = b != 0
    if not (nonzero.all() if hasattr(nonzero, "all") else nonzero):
        raise IntegerDivisionByZero(
            f"{op}: integer division by zero (the divisor has zeros); use floating point "
            "tensors to get inf/nan instead"
        )


def _trunc_div_int(a, b):
    """C-style integer division (towards zero): (a - fmod(a, b)) // b is exact."""
    return (a - np.fmod(a, b)) // b


class RoundedDiv(Function):
    """trunc(a / b) or floor(a / b); gradient zero for every tensor operand (PyTorch)."""

    save_inputs = ()

    def forward(self, a, b, mode="trunc"):
        self.sa, self.sb = _shape(a), _shape(b)
        is_int = not _is_float_operand(a)
        if hasattr(b, "dtype"):
            is_int = is_int and not _is_float_array(b)
        try:
            if is_int:
                _check_int_zero(b, f"div(rounding_mode={mode!r})", a)
                return np.floor_divide(a, b) if mode == "floor" else _trunc_div_int(a, b)
            with np.errstate(divide="ignore", invalid="ignore"):
                if mode == "floor":
                    return np.floor_divide(a, b)
                return np.trunc(np.true_divide(a, b))
        except ValueError:
            raise _broadcast_error("div", a, b) from None

    def backward(self, g):
        xp = get_array_module(g)
        ga = xp.zeros(self.sa, g.dtype) if self.needs_input_grad[0] else None
        gb = xp.zeros(self.sb, g.dtype) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        return tuple(None if z is None else const(z) for z in self.backward(g.array))


def _rounded_div(a, b, mode):
    """``div(a, b, rounding_mode=mode)`` on already-promoted operands (Tensor or number)."""
    if mode not in ("trunc", "floor"):
        raise RuntimeError(  # torch's type
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {mode!r}"
        )
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_tensor_arg(a)
    out = RoundedDiv.apply(a, b, mode=mode)
    ref = a if isinstance(a, Tensor) else b
    if out.array.dtype != ref.array.dtype:  # NumPy scalar promotion (0-d arrays) guard
        out = _wrap(out.array.astype(ref.array.dtype), out.requires_grad, out.grad_fn)
    return out


@register("floor_divide")
def floor_divide(input, other):
    """``floor(input / other)`` (PyTorch >= 1.13 semantics); zero gradient."""
    a, b = promote(input, other)
    return _rounded_div(a, b, "floor")


@register("floor_divide_")
def floor_divide_(input, other):
    return inplace(input, floor_divide(input, other))


class Remainder(Function):
    """Python-style (``'floor'``) or C-style (``'trunc'``) modulus.

    y = a - b * q with q = floor(a/b) or trunc(a/b); da = g, db = -g q."""

    save_inputs = (0, 1)

    def forward(self, a, b, mode="floor"):
        self.a, self.b, self.mode = a, b, mode
        is_int = not _is_float_operand(a) and not _is_float_operand(b)
        if is_int:
            _check_int_zero(b, "remainder" if mode == "floor" else "fmod", a)
        try:
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.remainder(a, b) if mode == "floor" else np.fmod(a, b)
            return as_dtype_of(y, a, b) if hasattr(a, "dtype") else as_dtype_of(y, b, a)
        except ValueError:
            raise _broadcast_error("remainder", a, b) from None

    def backward(self, g):
        a, b = self.a, self.b
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = unbroadcast(g, _shape(a))
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.floor_divide(a, b) if self.mode == "floor" else np.trunc(np.true_divide(a, b))
            gb = unbroadcast((-g * q).astype(g.dtype, copy=False), _shape(b))
        return ga, gb

    def backward_graph(self, g):
        # linear in g; the quotient q is piecewise constant in a and b (its derivative is 0)
        a, b = self.a, self.b
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = sum_to(g, _shape(a))
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.floor_divide(a, b) if self.mode == "floor" else np.trunc(np.true_divide(a, b))
            gb = sum_to(-g * const(q, g), _shape(b))
        return ga, gb


def _mod(input, other, mode):
    a, b = promote(input, other)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_tensor_arg(a)
    return Remainder.apply(a, b, mode=mode)


@register("remainder")
def remainder(input, other):
    """``input - other * floor(input / other)`` (sign of ``other``, like Python ``%``)."""
    return _mod(input, other, "floor")


@register("fmod")
def fmod(input, other):
    """``input - other * trunc(input / other)`` (sign of ``input``, like C ``fmod``)."""
    return _mod(input, other, "trunc")


@register("remainder_")
def remainder_(input, other):
    return inplace(input, remainder(input, other))


@register("fmod_")
def fmod_(input, other):
    return inplace(input, fmod(input, other))
