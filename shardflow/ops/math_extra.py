"""More elementwise math with PyTorch's names: inverse hyperbolics, angle conversions, sinc,
``logit``, ``signbit``; (``lgamma`` / ``digamma`` / ``erfinv`` / ``xlogy`` are in
``special_functions.py``; ``xlogy_`` is here);
binary ``atan2``, ``hypot``, ``logaddexp(2)``, ``copysign``, ``heaviside``,
``float_power``, ``ldexp``, ``nextafter``; the aliases ``negative``, ``positive``,
``subtract``, ``multiply``, ``divide``, ``true_divide``.

Unary ops follow ``elementwise.py``'s conventions (integer inputs compute in the default
float dtype; an in-place ``name_`` form where PyTorch has one). Gradients, as PyTorch's:

* ``acosh``: ``g / sqrt(x^2 - 1)``; ``asinh``: ``g / sqrt(x^2 + 1)``; ``atanh``: ``g / (1 - x^2)``
* ``sinc(x) = sin(pi x) / (pi x)`` (1 at 0): ``g (cos(pi x) - sinc(x)) / x``, 0 at 0
* ``logit(x, eps)`` = ``log(z / (1 - z))``, ``z = clamp(x, eps, 1 - eps)``: ``g / (z (1 - z))``,
  zero where ``x`` was clamped (``eps`` given)
* ``atan2(y, x)``: ``(g x, -g y) / (x^2 + y^2)`` (0 where ``x^2 + y^2`` is 0, as torch); ``hypot(a, b)``: ``g (a, b) / hypot``
* ``logaddexp(a, b)``: ``g exp(a - out)``, ``g exp(b - out)`` (base 2 for ``logaddexp2``)
* ``copysign(a, b)``: ``g sign(a) sign(out)`` for ``a``, none for ``b``
* ``float_power`` computes in float64 (complex is not supported); ``ldexp(a, b) = a * 2^b``
* ``signbit``, ``heaviside``, ``nextafter`` have no gradient.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import dtypes, get_array_module
from ._util import promote, unbroadcast
from .arithmetic import div, mul, neg, neg_, sub
from .elementwise import _float_arg, _make_unary, _same_dtype, _unary, _UnaryX, exp2, pow, where
from .special_functions import xlogy

__all__ = [
    "acosh", "acosh_", "asinh", "asinh_", "atanh", "atanh_", "arccosh", "arccosh_", "arcsinh",
    "arcsinh_", "arctanh", "arctanh_", "deg2rad", "deg2rad_", "rad2deg", "rad2deg_", "sinc",
    "sinc_", "logit", "logit_",
    "signbit", "negative", "negative_", "positive", "atan2", "arctan2", "atan2_", "arctan2_",
    "hypot", "hypot_", "logaddexp", "logaddexp2", "copysign", "copysign_", "xlogy_",
    "heaviside", "float_power", "ldexp", "nextafter", "subtract", "multiply", "divide",
    "true_divide",
]

_PI = math.pi
_D2R = math.pi / 180.0


def _sinc(x):
    return np.sinc(x)  # NumPy's sinc is the normalised one: sin(pi x) / (pi x)


def _dsinc(g, x):
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (np.cos(_PI * x) - np.sinc(x)) / x
    return g * np.where(x == 0, 0.0, d).astype(g.dtype)


Acosh = _unary("Acosh", _UnaryX, np.arccosh, lambda g, x: g / np.sqrt(x * x - 1.0), "acosh; grad g/sqrt(x^2-1)",
               dg=lambda g, x: g / (x * x - 1.0).sqrt())
Asinh = _unary("Asinh", _UnaryX, np.arcsinh, lambda g, x: g / np.sqrt(x * x + 1.0), "asinh; grad g/sqrt(x^2+1)",
               dg=lambda g, x: g / (x * x + 1.0).sqrt())
Atanh = _unary("Atanh", _UnaryX, np.arctanh, lambda g, x: g / (1.0 - x * x), "atanh; grad g/(1-x^2)",
               dg=lambda g, x: g / (1.0 - x * x))
Deg2rad = _unary("Deg2rad", _UnaryX, lambda x: x * _D2R, lambda g, x: g * _D2R, "x*pi/180",
                 dg=lambda g, x: g * _D2R)
Rad2deg = _unary("Rad2deg", _UnaryX, lambda x: x * (1.0 / _D2R), lambda g, x: g * (1.0 / _D2R), "x*180/pi",
                 dg=lambda g, x: g * (1.0 / _D2R))
Sinc = _unary("Sinc", _UnaryX, _sinc, _dsinc, "sin(pi x)/(pi x)")
acosh, acosh_ = _make_unary("acosh", Acosh, ufunc=np.arccosh)
asinh, asinh_ = _make_unary("asinh", Asinh, ufunc=np.arcsinh)
atanh, atanh_ = _make_unary("atanh", Atanh, ufunc=np.arctanh)
deg2rad, deg2rad_ = _make_unary("deg2rad", Deg2rad, ufunc=np.deg2rad)
rad2deg, rad2deg_ = _make_unary("rad2deg", Rad2deg, ufunc=np.rad2deg)
sinc, sinc_ = _make_unary("sinc", Sinc, complex_ok=True)  # holomorphic: torch takes complex too
arccosh, arcsinh, arctanh = register("arccosh")(acosh), register("arcsinh")(asinh), register("arctanh")(atanh)
arccosh_, arcsinh_, arctanh_ = (register("arccosh_")(acosh_), register("arcsinh_")(asinh_),
                                register("arctanh_")(atanh_))


class Logit(Function):
    save_inputs = (0,)

    def forward(self, x, eps=None):
        z = x if eps is None else np.clip(x, eps, 1.0 - eps)
        self.x, self.z, self.eps = x, z, eps
        return _same_dtype(np.log(z / (1.0 - z)), x)

    def backward(self, g):
        z = self.z
        gx = g / (z * (1.0 - z))
        if self.eps is not None:  # clamped inputs get no gradient
            gx = gx * ((self.x >= self.eps) & (self.x <= 1.0 - self.eps)).astype(g.dtype)
        return _same_dtype(gx, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        if self.eps is None:
            return g / (x * (1.0 - x))
        z = x.clamp(self.eps, 1.0 - self.eps)
        inside = (self.x >= self.eps) & (self.x <= 1.0 - self.eps)
        return g / (z * (1.0 - z)) * _wrap(inside.astype(g.array.dtype))


@register("logit")
def logit(input, eps=None) -> Tensor:
    """``log(z / (1 - z))`` with ``z = clamp(input, eps, 1 - eps)`` when ``eps`` is given."""
    return Logit.apply(_float_arg(input, "logit"), eps=None if eps is None else float(eps))


@register("logit_")
def logit_(input, eps=None) -> Tensor:
    from ._util import inplace

    return inplace(input, logit(input, eps))


@register("signbit")
def signbit(input) -> Tensor:
    """Whether the sign bit is set (True for -0.0 too); bool, no gradient."""
    return _wrap(get_array_module(input.array).signbit(input.array))


@register("positive")
def positive(input) -> Tensor:
    """``input`` itself, as PyTorch (a bool tensor is refused)."""
    if input.dtype is dtypes.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


subtract, multiply, divide, true_divide = sub, mul, div, div  # registered as aliases there


# ---------------------------------------------------------------------------- binary
def _binary_args(input, other):
    a, b = promote(input, other)
    if not isinstance(a, Tensor):
        a = _wrap(get_array_module(b.array).asarray(a, dtype=b.array.dtype))
    if not isinstance(b, Tensor):
        b = _wrap(get_array_module(a.array).asarray(b, dtype=a.array.dtype))
    f = dtypes.get_default_dtype().np
    if a.array.dtype.kind not in "fV":  # integer/bool operands: the default float dtype
        a, b = _wrap(a.array.astype(f)), _wrap(b.array.astype(f)) if b.array.dtype.kind not in "fV" else b
    return a, b


def _shp(x):
    return x.shape if hasattr(x, "shape") else ()


class _Binary(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        out = self.f(a, b)
        self.out = out
        return _same_dtype(out, a)

    def backward(self, g):
        ga, gb = self.grads(g, self.a, self.b, self.out)
        ga = None if ga is None or not self.needs_input_grad[0] else unbroadcast(_same_dtype(ga, g), _shp(self.a))
        gb = None if gb is None or not self.needs_input_grad[1] else unbroadcast(_same_dtype(gb, g), _shp(self.b))
        return ga, gb

    def backward_graph(self, g):
        """``grads_graph``: the subclass's ``grads`` on Tensors (saved inputs and output)."""
        out = self.saved_output(0, _same_dtype(self.out, self.a))
        ga, gb = self.grads_graph(g, self.saved_input(0), self.saved_input(1), out)
        return (ga if self.needs_input_grad[0] else None), (gb if self.needs_input_grad[1] else None)


class Atan2(_Binary):
    f = staticmethod(np.arctan2)

    # torch's atan2_backward: recip = 1 / (y^2 + x^2), taken as 0 where that sum is 0 (at the
    # origin, or where it underflows), so the gradient there is 0 (-0 for x), not nan -- the
    # phase atan2(imag, real) of a silent STFT bin; (g x) recip in torch's order of operations
    @staticmethod
    def grads(g, y, x, out):
        xp = get_array_module(g)
        r = y * y + x * x
        zero = r == 0
        recip = xp.where(zero, 0, 1 / xp.where(zero, 1, r)).astype(r.dtype, copy=False)
        return g * x * recip, g * -y * recip

    @staticmethod
    def grads_graph(g, y, x, out):
        # torch masks the computed reciprocal: its own backward (-1 / r^2) is then nan at
        # the origin, and so are torch's second derivatives there
        r = y * y + x * x
        recip = where(r == 0, 0.0, r.reciprocal())
        return g * x * recip, g * -y * recip


class Hypot(_Binary):
    f = staticmethod(np.hypot)

    @staticmethod
    def grads(g, a, b, out):
        return g * a / out, g * b / out

    @staticmethod
    def grads_graph(g, a, b, out):
        return g * a / out, g * b / out


class Logaddexp(_Binary):
    f = staticmethod(np.logaddexp)

    @staticmethod
    def grads(g, a, b, out):
        return g * np.exp(a - out), g * np.exp(b - out)

    @staticmethod
    def grads_graph(g, a, b, out):
        return g * (a - out).exp(), g * (b - out).exp()


class Logaddexp2(_Binary):
    f = staticmethod(np.logaddexp2)

    @staticmethod
    def grads(g, a, b, out):
        return g * np.exp2(a - out), g * np.exp2(b - out)

    @staticmethod
    def grads_graph(g, a, b, out):
        return g * (a - out).exp2(), g * (b - out).exp2()


class Copysign(_Binary):
    f = staticmethod(np.copysign)

    @staticmethod
    def grads(g, a, b, out):
        return g * (np.sign(a) * np.sign(out)), None

    @staticmethod
    def grads_graph(g, a, b, out):
        return g * _wrap(np.sign(a.array) * np.sign(out.array)), None


def _make_binary(name, cls, aliases=(), inplace_too=True):
    def fn(input, other):
        a, b = _binary_args(input, other)
        return cls.apply(a, b)

    def fn_(input, other):
        from ._util import inplace

        return inplace(input, fn(input, other))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}`` (see the module docstring)."
    fn_.__name__ = fn_.__qualname__ = name + "_"
    out = register(name, *aliases)(fn)
    return (out, register(name + "_", *(a + "_" for a in aliases))(fn_)) if inplace_too else out


atan2, atan2_ = _make_binary("atan2", Atan2, aliases=("arctan2",))
arctan2, arctan2_ = atan2, atan2_
hypot, hypot_ = _make_binary("hypot", Hypot)
logaddexp = _make_binary("logaddexp", Logaddexp, inplace_too=False)
logaddexp2 = _make_binary("logaddexp2", Logaddexp2, inplace_too=False)
copysign, copysign_ = _make_binary("copysign", Copysign)


@register("xlogy_")
def xlogy_(input, other) -> Tensor:
    """``Tensor.xlogy_``: ``xlogy`` (special_functions.py) written into ``input``."""
    from ._util import inplace

    return inplace(input, xlogy(input, other))


@register("heaviside")
def heaviside(input, values) -> Tensor:
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0``; no gradient."""
    a, v = input.array, values.array if isinstance(values, Tensor) else values
    xp = get_array_module(a)
    out = xp.where(a == 0, v, (a > 0).astype(a.dtype))
    return _wrap(xp.asarray(out).astype(np.result_type(a, getattr(v, "dtype", a.dtype))))


@register("nextafter")
def nextafter(input, other) -> Tensor:
    """The next float after ``input`` towards ``other``; no gradient."""
    a, b = promote(input, other)
    return _wrap(np.nextafter(a.array, b.array if isinstance(b, Tensor) else b))


@register("float_power")
def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` in float64 (PyTorch's result dtype), with pow's gradient."""
    def f64(x):
        if isinstance(x, Tensor):
            return x.to(dtypes.float64)
        return float(x)
    return pow(f64(input), f64(exponent))


@register("float_power_")
def float_power_(input, exponent) -> Tensor:
    if input.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {input.dtype} but the operation's "
                           "result requires dtype Double; call .double() first")
    from ._util import inplace

    return inplace(input, float_power(input, exponent))


@register("ldexp")
def ldexp(input, other) -> Tensor:
    """``input * 2 ** other`` (a float result, as PyTorch)."""
    x = _float_arg(input, "ldexp", complex_ok=True)
    e = other if isinstance(other, Tensor) else Tensor(np.asarray(other))
    return mul(x, exp2(_float_arg(e).to(x.dtype)))

negative, negative_ = neg, neg_  # arithmetic.py registers them as aliases
