"""Binary arithmetic: add, sub, mul, div (with ``alpha`` / ``rounding_mode``), their in-place
forms, and neg. This file is the template for an op family:

* a ``Function`` subclass per op works on raw arrays; ``save_inputs`` says which inputs
  backward reads (for the in-place-modification check);
* the functional form (registered under the PyTorch name) promotes dtypes and handles
  Python scalars, then calls ``Function.apply``;
* the in-place form computes out of place and hands the result to ``inplace``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ._util import as_dtype_of, inplace, number_arg, promote, unbroadcast

_SHAPE_ERR = (
    "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
    "dimension {d}: shapes {sa} and {sb} do not broadcast"
)


def _broadcast_error(sa, sb) -> RuntimeError:
    ra, rb = tuple(reversed(sa)), tuple(reversed(sb))
    for i in range(min(len(ra), len(rb))):
        if ra[i] != rb[i] and ra[i] != 1 and rb[i] != 1:
            return RuntimeError(
                _SHAPE_ERR.format(a=ra[i], b=rb[i], d=max(len(sa), len(sb)) - 1 - i, sa=tuple(sa), sb=tuple(sb))
            )
    return RuntimeError(f"shapes {tuple(sa)} and {tuple(sb)} do not broadcast")


def _shape(x):
    return x.shape if hasattr(x, "shape") else ()


class Add(Function):
    save_inputs = ()

    def forward(self, a, b, alpha=1):
        self.sa, self.sb, self.alpha = _shape(a), _shape(b), alpha
        try:
            return as_dtype_of(a + b if alpha == 1 else a + b * alpha, a, b)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None

    def backward(self, g):
        ga = unbroadcast(g, self.sa) if self.needs_input_grad[0] else None
        gb = None
        if self.needs_input_grad[1]:
            gb = unbroadcast(g if self.alpha == 1 else as_dtype_of(g * self.alpha, g), self.sb)
        return ga, gb


class Sub(Function):
    save_inputs = ()

    def forward(self, a, b, alpha=1):
        self.sa, self.sb, self.alpha = _shape(a), _shape(b), alpha
        try:
            return as_dtype_of(a - b if alpha == 1 else a - b * alpha, a, b)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None

    def backward(self, g):
        ga = unbroadcast(g, self.sa) if self.needs_input_grad[0] else None
        gb = unbroadcast(-g if self.alpha == 1 else as_dtype_of(g * -self.alpha, g), self.sb) if self.needs_input_grad[1] else None
        return ga, gb


def _conj(x):
    """``x`` conjugated when complex: for a complex product PyTorch's gradient is
    ``g * conj(other)`` (conjugate Wirtinger calculus). Real operands pass untouched."""
    if isinstance(x, complex) or (hasattr(x, "dtype") and x.dtype.kind == "c"):
        return x.conjugate()
    return x


class Mul(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        try:
            return as_dtype_of(a * b, a, b)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None

    def backward(self, g):
        a, b = self.a, self.b
        ga = unbroadcast(g * _conj(b), _shape(a)) if self.needs_input_grad[0] else None
        gb = unbroadcast(g * _conj(a), _shape(b)) if self.needs_input_grad[1] else None
        return ga, gb


class Div(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        try:
            return as_dtype_of(a / b, a, b)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None

    def backward(self, g):
        a, b = _conj(self.a), _conj(self.b)
        ga = unbroadcast(g / b, _shape(a)) if self.needs_input_grad[0] else None
        gb = unbroadcast(-g * a / (b * b), _shape(b)) if self.needs_input_grad[1] else None
        return ga, gb


class Neg(Function):
    save_inputs = ()

    def forward(self, a):
        return -a

    def backward(self, g):
        return -g


@register("add")
def add(input, other, *, alpha=1, out=None):
    if type(alpha) is not int:
        alpha = number_arg(alpha, "add", "alpha")
    a, b = promote(input, other)
    if not isinstance(a, Tensor):  # scalar + Tensor: keep the Tensor first (commutative)
        return Add.apply(b, a, alpha=1) if alpha == 1 else Add.apply(b * alpha, a)
    return Add.apply(a, b, alpha=alpha)


@register("sub", "subtract")
def sub(input, other, *, alpha=1):
    if type(alpha) is not int:
        alpha = number_arg(alpha, "sub", "alpha")
    a, b = promote(input, other)
    if not isinstance(a, Tensor):  # scalar - Tensor
        return Add.apply(Neg.apply(b) if alpha == 1 else b * -alpha, a)
    return Sub.apply(a, b, alpha=alpha)


@register("mul", "multiply")
def mul(input, other):
    a, b = promote(input, other)
    if not isinstance(a, Tensor):
        return Mul.apply(b, a)
    return Mul.apply(a, b)


def _int_div_dtype_fix(a, b):
    """True division always gives a float (PyTorch): ints are cast to the default float
    (complex tensors stay complex)."""
    from ..backend import dtypes
    from .conversion import to_dtype

    f = dtypes.get_default_dtype()
    if isinstance(a, Tensor) and not a.dtype.is_floating_point and not a.dtype.is_complex:
        a = to_dtype(a, f)
    if isinstance(b, Tensor) and not b.dtype.is_floating_point and not b.dtype.is_complex:
        b = to_dtype(b, f)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        a, b = promote(a, b)
    return a, b


@register("div", "divide", "true_divide")
def div(input, other, *, rounding_mode=None):
    a, b = promote(input, other)
    if rounding_mode is not None:
        from .elementwise_extra import _rounded_div

        return _rounded_div(a, b, rounding_mode)
    a, b = _int_div_dtype_fix(a, b)
    if not isinstance(a, Tensor):
        return Mul.apply(Reciprocal.apply(b), a)
    if not isinstance(b, Tensor):
        return Mul.apply(a, 1.0 / b) if b != 0 else Div.apply(a, np.asarray(b, a.array.dtype))
    return Div.apply(a, b)


class Reciprocal(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a):
        self.out = as_dtype_of(1.0 / a, a)
        return self.out

    def backward(self, g):
        out = _conj(self.out)
        return -g * out * out


@register("reciprocal")
def reciprocal(input):
    a, _ = _int_div_dtype_fix(input, None)
    return Reciprocal.apply(a)


@register("neg", "negative")
def neg(input):
    return Neg.apply(input)


@register("add_")
def add_(t, other, *, alpha=1):
    return inplace(t, add(t, other, alpha=alpha))


@register("sub_")
def sub_(t, other, *, alpha=1):
    return inplace(t, sub(t, other, alpha=alpha))


@register("mul_")
def mul_(t, other):
    return inplace(t, mul(t, other))


@register("div_")
def div_(t, other, *, rounding_mode=None):
    return inplace(t, div(t, other, rounding_mode=rounding_mode))


@register("neg_", "negative_")
def neg_(t):
    return inplace(t, neg(t))
