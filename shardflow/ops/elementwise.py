"""Elementwise ops: unary math, activations, pow, clamp, maximum/minimum, where, lerp and
addcmul/addcdiv (rounding and division variants live in ``rounding.py``; comparisons, logical
and bitwise ops in ``comparison.py``).

Conventions (see ``arithmetic.py``, the family template):

* Unary float ops (``exp``, ``sigmoid``, ``gelu`` ...) on integer or bool tensors compute in
  the default float dtype, as PyTorch does; ops that make sense on integers (``abs``,
  ``square``, ``relu``, ``clamp`` ...) keep the input dtype.
* Backward formulas use Python float constants only, so NumPy keeps float32 as float32.
  Ops whose backward can be written from the output save the output (``save_output``),
  like PyTorch's ``exp``/``tanh``/``sigmoid``/``relu``.
* In-place forms (``exp_``, ``clamp_``, ``addcmul_``, ``lerp_`` ...) write straight into the
  target array with NumPy ``out=`` when no graph has to be recorded (the optimizer path);
  otherwise they compute out of place and rebase the tensor through ``_util.inplace``.

Numerics:

* ``sigmoid(x) = exp(min(x, 0)) / (1 + exp(-|x|))``: never overflows, keeps relative
  accuracy in both tails, and needs no select.
* Speed: NumPy's masked selects (``np.where`` on an unpredictable mask, boolean indexing)
  cost 20-50x an arithmetic pass, so hot paths are branch-free: masks are multiplied in as
  0/1 arrays (a gradient of inf/NaN at a masked-out position then gives NaN where PyTorch
  gives 0), and ``out=`` reuses temporaries.
* ``erf``/``erfc``: in float64, W. J. Cody's rational Chebyshev approximations (Math. Comp.
  23, 1969; the CALERF algorithm) on three ranges, ``|x| <= 0.46875``, ``<= 4`` and beyond,
  with ``exp(-x^2)`` split as ``exp(-s^2) exp(-(x-s)(x+s))`` for ``s = trunc(16 x) / 16``;
  relative error near double precision (checked against ``torch.erf`` in float64). erf in
  float32 and below uses the branch-free rational of Eigen/XLA (x clamped to [-4, 4],
  ``x P(x^2) / Q(x^2)``, absolute error ~1e-7); erfc keeps Cody's ranges in every dtype
  for its relative accuracy in the tail.
* ``softplus(x) = (max(bx, 0) + log1p(exp(-|bx|))) / beta`` (``bx = beta x``) where
  ``bx <= threshold``, else ``x``.
* ``gelu``: exact ``x/2 (1 + erf(x / sqrt 2))``, or the ``'tanh'`` approximation.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import dtypes, get_array_module, result_type
from ..kernels import activation as _activation_kernels
from ..kernels import cuda as _cuda_kernels
from ..kernels import gelu as _gelu_kernels
from . import _grad_graph as _gg
from ._util import (
    _SCALARS,
    CLAMP_COMPLEX,
    _down,
    _is_float_array,
    _shape,
    _up,
    as_array,
    as_dtype_of,
    as_tensor_arg,
    fill_scalar,
    inplace,
    needs_graph,
    promote,
    refuse_complex,
    refuse_complex_runtime,
    unbroadcast,
)
from .blocked import run_blocked

__all__ = [
    # unary math
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "abs", "absolute",
    "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos",
    "arctan", "sigmoid", "erf", "erfc", "square",
    "exp_", "exp2_", "log_", "log2_", "log10_", "log1p_", "expm1_", "sqrt_", "rsqrt_", "abs_",
    "sin_", "cos_", "tan_", "tanh_", "sinh_", "cosh_", "sigmoid_", "erf_", "erfc_", "square_",
    # activations
    "relu", "relu_", "relu6", "gelu", "silu", "softplus", "leaky_relu", "leaky_relu_", "elu",
    "elu_", "selu", "selu_", "celu", "mish", "hardtanh", "hardtanh_", "hardsigmoid",
    "hardswish", "logsigmoid",
    # binary / ternary
    "pow", "pow_", "clamp", "clip", "clamp_", "clip_", "clamp_min", "clamp_max",
    "clamp_min_", "clamp_max_", "maximum", "minimum", "fmax", "fmin", "where", "lerp",
    "lerp_", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
]

_SQRT1_2 = math.sqrt(0.5)
_2_SQRTPI = 2.0 / math.sqrt(math.pi)
_1_SQRTPI = 1.0 / math.sqrt(math.pi)
_1_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# ---------------------------------------------------------------------------- helpers
_TORCH_COMPLEX_NAME = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _float_arg(t, name="this op", complex_ok=False) -> Tensor:
    """``t`` as a floating Tensor: integer/bool tensors become the default float dtype. A
    complex tensor passes where the op has a complex form (``complex_ok``); elsewhere it
    raises PyTorch's NotImplementedError (casting it dropped the imaginary part silently)."""
    if not isinstance(t, Tensor):
        t = as_tensor_arg(t)
    k = t.array.dtype.kind
    if k == "f" or k == "V":
        return t
    if k == "c":
        if complex_ok:
            return t
        raise NotImplementedError(
            f'"{name}" not implemented for \'{_TORCH_COMPLEX_NAME[t.array.dtype.name]}\': {name} has no '
            "complex form; apply it to .real and .imag (or .abs()) instead")
    return _wrap(t.array.astype(dtypes.get_default_dtype().np))


def _tensor_arg(t) -> Tensor:
    return t if isinstance(t, Tensor) else as_tensor_arg(t)


def _same_dtype(y, x):
    """Cast ``y`` back to ``x``'s dtype (bfloat16 arrays mixed with Python floats widen)."""
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _check_inplace_dtype(t: Tensor, name: str) -> None:
    if not _is_float_array(t.array):
        raise RuntimeError(
            f"{name}: result type Float can't be cast to the desired output type {t.dtype}; "
            f"call .float() first, or use the out-of-place {name.rstrip('_')}()"
        )


# ---------------------------------------------------------------------------- erf (Cody)
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
          2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
          2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
          1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
          3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
          1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
          6.05183413124413191e-2, 2.33520497626869185e-3)
_ERF_SMALL = 0.46875


def _erf_small(x):
    """erf(x) for |x| <= 0.46875: x P(x^2) / Q(x^2)."""
    a, b = _ERF_A, _ERF_B
    z = x * x
    num = (((a[4] * z + a[0]) * z + a[1]) * z + a[2]) * z + a[3]
    den = (((z + b[0]) * z + b[1]) * z + b[2]) * z + b[3]
    return x * num / den


def _exp_neg_sq(y):
    """exp(-y^2) with the square split so its rounding error is not amplified."""
    s = np.trunc(y * 16.0) / 16.0
    return np.exp(-s * s) * np.exp(-(y - s) * (y + s))


def _erfc_pos(y):
    """erfc(y) for y > 0.46875 (rational in y up to 4, in 1/y^2 beyond)."""
    out = np.empty_like(y)
    mid = y <= 4.0
    ym = y[mid]
    if ym.size:
        c, d = _ERF_C, _ERF_D
        num = c[8] * ym
        den = ym
        for i in range(7):
            num = (num + c[i]) * ym
            den = (den + d[i]) * ym
        out[mid] = _exp_neg_sq(ym) * (num + c[7]) / (den + d[7])
    big = ~mid
    yb = np.minimum(y[big], 1e4)  # erfc(1e4) is 0 even in double; keeps inf from making NaN
    if yb.size:
        p, q = _ERF_P, _ERF_Q
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = 1.0 / (yb * yb)
            num = p[5] * z
            den = z
            for i in range(4):
                num = (num + p[i]) * z
                den = (den + q[i]) * z
            r = z * (num + p[4]) / (den + q[4])
            r = (_1_SQRTPI - r) / yb
            out[big] = _exp_neg_sq(yb) * r
    return out


# Branch-free float32 erf (the rational used by Eigen and XLA): x clamped to [-4, 4],
# erf(x) = x P(x^2) / Q(x^2); absolute error ~1e-7. NumPy's masked selects (np.where with
# an unpredictable mask, boolean indexing) cost 20-50x an arithmetic pass, so the hot
# float32 path avoids them; float64 uses Cody's three ranges for double accuracy.
_ERF32_ALPHA = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                -1.60960333262415e-02)
_ERF32_BETA = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
               -7.37332916720468e-03, -1.42647390514189e-02)


def _at_least_1d(f):
    """Run ``f`` (which uses ``out=``) on a 1-element view of a 0-d array."""

    def g(x):
        if x.ndim == 0:
            return f(x.reshape(1)).reshape(())
        return f(x)

    g.__name__, g.__doc__ = f.__name__, f.__doc__
    return g


def _upcast(x):
    """Half precision is evaluated in float32 (and cast back by the caller)."""
    return x if x.dtype.itemsize >= 4 else x.astype(np.float32)


@_at_least_1d
def _erf32(x):
    v = np.clip(x, -4.0, 4.0)
    x2 = v * v
    a, b = _ERF32_ALPHA, _ERF32_BETA
    p = x2 * a[0]
    p += a[1]
    for c in a[2:]:
        p *= x2
        p += c
    q = x2 * b[0]
    q += b[1]
    for c in b[2:]:
        q *= x2
        q += c
    p *= v
    p /= q
    return np.clip(p, -1.0, 1.0, out=p)


def _erf_cody(x):
    y = np.abs(x)
    small = y <= _ERF_SMALL
    if small.all():
        return _erf_small(x)
    out = np.empty_like(x)
    out[small] = _erf_small(x[small])
    big = ~small
    out[big] = np.copysign(1.0 - _erfc_pos(y[big]), x[big])
    return out


def erf_array(x):
    """erf on a raw floating array (same dtype out): Cody in float64, rational in float32."""
    if x.dtype == np.float64:
        return _erf_cody(x)
    return _same_dtype(_erf32(_upcast(x)), x)


def erfc_array(x):
    """erfc on a raw floating array (same dtype out); Cody's ranges keep the right tail
    relatively accurate in every dtype."""
    xc = x if x.dtype == np.float64 or x.dtype == np.float32 else x.astype(np.float32)
    y = np.abs(xc)
    small = y <= _ERF_SMALL
    out = np.empty_like(xc)
    out[small] = 1.0 - _erf_small(xc[small])
    big = ~small
    ec = _erfc_pos(y[big])
    out[big] = np.where(xc[big] < 0, 2.0 - ec, ec)
    return _same_dtype(out, x)


@_at_least_1d
def _sigmoid(x):
    d = np.abs(x)
    np.negative(d, out=d)
    np.exp(d, out=d)
    d += 1.0  # 1 + exp(-|x|) in (1, 2]
    n = np.minimum(x, 0)
    np.exp(n, out=n)  # exp(min(x, 0)) in (0, 1]
    n /= d
    return n


def sigmoid_array(x):
    """Logistic function without overflow: exp(min(x, 0)) / (1 + exp(-|x|)) (branch-free;
    relative accuracy kept in both tails); 1 / (1 + exp(-z)) for a complex z."""
    if x.dtype.kind == "c":
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return 1.0 / (1.0 + np.exp(-x))
    return _same_dtype(_sigmoid(_upcast(x)), x)


@_at_least_1d
def _log1p_exp_neg_abs(x):
    """log(1 + exp(-|x|)) in (0, log 2], the shared piece of softplus and logsigmoid."""
    t = np.abs(x)
    np.negative(t, out=t)
    np.exp(t, out=t)
    return np.log1p(t, out=t)


def softplus_array(x):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)) (no overflow, no select)."""
    xc = _upcast(x)
    t = _log1p_exp_neg_abs(xc)
    t += np.maximum(xc, 0)
    return _same_dtype(t, x)


def _ip(ufunc, a, *args):
    """``ufunc(a, *args)`` written into ``a`` when it is an array (ufuncs on 0-d inputs
    give NumPy scalars, which cannot take ``out=``)."""
    if isinstance(a, np.ndarray):
        return ufunc(a, *args, out=a)
    return ufunc(a, *args)


def _mask(cond, dtype):
    """Boolean mask as 0/1 in ``dtype`` (multiplying by it is far cheaper than np.where)."""
    return cond.astype(dtype)


def _grad_where(g, cond):
    """``g`` where ``cond``, else 0, as PyTorch's ``where``-based backwards (clamp, hardtanh,
    threshold): an inf/NaN output gradient at a position the mask drops gives 0, not the NaN
    of ``g * 0``. One multiply, and a fix-up pass only when the product is not finite."""
    with np.errstate(invalid="ignore"):
        gx = g * _mask(cond, g.dtype)
    if not np.isfinite(gx).all():
        np.copyto(gx, 0, where=~np.broadcast_to(cond, gx.shape))
    return gx


# ---------------------------------------------------------------------------- unary bases
class _UnaryX(Function):
    """y = f(x); backward reads the saved input: grad = df(g, x)."""

    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        return _same_dtype(self.f(x), x)

    def backward(self, g):
        if self.x.dtype.kind == "c":  # holomorphic f: g * conj(f'(z)) = conj(conj(g) * f'(z))
            return np.conj(self.df(np.conj(g), self.x))
        return _same_dtype(self.df(g, self.x), g)

    def graph_from_dg(self, g):
        """``backward_graph`` of a table op (see _unary): ``dg`` on the saved input."""
        if self.x.dtype.kind == "c":
            return self.dg(g.conj(), self.saved_input(0)).conj()
        return self.dg(g, self.saved_input(0))


class _UnaryY(Function):
    """y = f(x); backward reads the saved output: grad = df(g, y)."""

    save_inputs = ()
    save_output = True

    def forward(self, x):
        y = _same_dtype(self.f(x), x)
        self.y = y
        return y

    def backward(self, g):
        if self.y.dtype.kind == "c":  # holomorphic f: g * conj(f'(z)) = conj(conj(g) * f'(z))
            return np.conj(self.df(np.conj(g), self.y))
        return _same_dtype(self.df(g, self.y), g)

    def graph_from_dg(self, g):
        """``backward_graph`` of a table op (see _unary): ``dg`` on the saved output."""
        if self.y.dtype.kind == "c":
            return self.dg(g.conj(), self.saved_output(0)).conj()
        return self.dg(g, self.saved_output(0))


def _unary(name, base, f, df, doc, dg=None):
    """A unary op class: ``f`` the forward on arrays, ``df(g, v)`` the gradient on arrays
    (``v`` the input for _UnaryX, the output for _UnaryY), ``dg(g, v)`` the same on Tensors
    with differentiable ops: it gives the class its ``backward_graph`` (higher-order
    gradients, autograd/higher_order.py)."""
    attrs = {"f": staticmethod(f), "df": staticmethod(df), "__doc__": doc}
    if dg is not None:
        attrs["dg"] = staticmethod(dg)
        attrs["backward_graph"] = base.graph_from_dg
    return type(name, (base,), attrs)


Exp = _unary("Exp", _UnaryY, np.exp, lambda g, y: g * y, "exp(x); grad g*y",
             dg=lambda g, y: g * y)
Exp2 = _unary("Exp2", _UnaryY, np.exp2, lambda g, y: g * (y * _LN2), "2^x; grad g*y*ln2",
              dg=lambda g, y: g * (y * _LN2))
Expm1 = _unary("Expm1", _UnaryY, np.expm1, lambda g, y: g * (y + 1.0), "exp(x)-1; grad g*(y+1)",
               dg=lambda g, y: g * (y + 1.0))
Sqrt = _unary("Sqrt", _UnaryY, np.sqrt, lambda g, y: g * 0.5 / y, "sqrt(x); grad g/(2y)",
              dg=lambda g, y: g * 0.5 / y)
def _rsqrt(x):
    """``1 / sqrt(x)``: two roundings in float32/float64 (torch's vectorised rsqrt); float16/
    bfloat16 computed in float32 and rounded once (as torch; the 2-byte sqrt rounded first was
    an ulp off in 37% of bfloat16 outputs)."""
    w, dt = _up(x)
    return 1.0 / np.sqrt(x) if dt is None else _down(np.float32(1) / np.sqrt(w), dt)


def _cube(y):
    """``y.pow(3)`` as torch: each product rounded, float16 rounded once (PowScalar)."""
    return np.power(y, 3) if y.dtype == np.float16 else y * y * y


# the gradient in torch's order: -0.5 * grad * result.pow(3)
Rsqrt = _unary("Rsqrt", _UnaryY, _rsqrt, lambda g, y: (-0.5 * g) * _cube(y),
               "1/sqrt(x); grad -g*y^3/2",
               dg=lambda g, y: (g * -0.5) * (y * y * y))
Tanh = _unary("Tanh", _UnaryY, np.tanh, lambda g, y: g * (1.0 - y * y), "tanh(x); grad g*(1-y^2)",
              dg=lambda g, y: g * (1.0 - y * y))
Tan = _unary("Tan", _UnaryY, np.tan, lambda g, y: g * (1.0 + y * y), "tan(x); grad g*(1+y^2)",
             dg=lambda g, y: g * (1.0 + y * y))
Sigmoid = _unary("Sigmoid", _UnaryY, sigmoid_array, lambda g, y: g * (y * (1.0 - y)),
                 "stable logistic; grad g*y*(1-y)",
                 dg=lambda g, y: g * (y * (1.0 - y)))
Log = _unary("Log", _UnaryX, np.log, lambda g, x: g / x, "ln(x); grad g/x",
             dg=lambda g, x: g / x)
Log2 = _unary("Log2", _UnaryX, np.log2, lambda g, x: g / (x * _LN2), "log2(x); grad g/(x ln2)",
              dg=lambda g, x: g / (x * _LN2))
Log10 = _unary("Log10", _UnaryX, np.log10, lambda g, x: g / (x * _LN10), "log10; grad g/(x ln10)",
               dg=lambda g, x: g / (x * _LN10))
Log1p = _unary("Log1p", _UnaryX, np.log1p, lambda g, x: g / (x + 1.0), "ln(1+x); grad g/(1+x)",
               dg=lambda g, x: g / (x + 1.0))
class Abs(_UnaryX):
    """|x|; grad g*sign(x). A complex x gives a real |x| and the gradient g*x/|x| (PyTorch's
    ``sgn``; NumPy's ``sign`` of a complex number is x/|x| already)."""

    f = staticmethod(np.abs)
    df = staticmethod(lambda g, x: g * np.sign(x))

    def forward(self, x):
        self.x = x
        return np.abs(x) if x.dtype.kind == "c" else _same_dtype(np.abs(x), x)

    def backward(self, g):
        gx = g * np.sign(self.x)
        return gx if self.x.dtype.kind == "c" else _same_dtype(gx, g)

    def backward_graph(self, g):
        if self.x.dtype.kind == "c":  # sgn(x) = x / |x| depends on x
            x = self.saved_input(0)
            return g * (x / x.abs())
        return g * _gg.const(np.sign(self.x), g)


Sin = _unary("Sin", _UnaryX, np.sin, lambda g, x: g * np.cos(x), "sin; grad g*cos(x)",
             dg=lambda g, x: g * x.cos())
Cos = _unary("Cos", _UnaryX, np.cos, lambda g, x: -g * np.sin(x), "cos; grad -g*sin(x)",
             dg=lambda g, x: -g * x.sin())
Sinh = _unary("Sinh", _UnaryX, np.sinh, lambda g, x: g * np.cosh(x), "sinh; grad g*cosh(x)",
              dg=lambda g, x: g * x.cosh())
Cosh = _unary("Cosh", _UnaryX, np.cosh, lambda g, x: g * np.sinh(x), "cosh; grad g*sinh(x)",
              dg=lambda g, x: g * x.sinh())
Asin = _unary("Asin", _UnaryX, np.arcsin, lambda g, x: g / np.sqrt(1.0 - x * x),
              "asin; grad g/sqrt(1-x^2)",
              dg=lambda g, x: g / (1.0 - x * x).sqrt())
Acos = _unary("Acos", _UnaryX, np.arccos, lambda g, x: -g / np.sqrt(1.0 - x * x),
              "acos; grad -g/sqrt(1-x^2)",
              dg=lambda g, x: -g / (1.0 - x * x).sqrt())
Atan = _unary("Atan", _UnaryX, np.arctan, lambda g, x: g / (1.0 + x * x), "atan; grad g/(1+x^2)",
              dg=lambda g, x: g / (1.0 + x * x))
Erf = _unary("Erf", _UnaryX, erf_array, lambda g, x: g * (_2_SQRTPI * np.exp(-x * x)),
             "erf (Cody); grad g*2/sqrt(pi)*exp(-x^2)",
             dg=lambda g, x: g * ((-(x * x)).exp() * _2_SQRTPI))
Erfc = _unary("Erfc", _UnaryX, erfc_array, lambda g, x: g * (-_2_SQRTPI * np.exp(-x * x)),
              "erfc (Cody); grad -g*2/sqrt(pi)*exp(-x^2)",
              dg=lambda g, x: g * ((-(x * x)).exp() * -_2_SQRTPI))
Square = _unary("Square", _UnaryX, np.square, lambda g, x: g * (2.0 * x), "x^2; grad 2gx",
                dg=lambda g, x: g * (x * 2.0))


class Relu(_UnaryY):
    """max(x, 0); grad g where y > 0, else 0 (also for an inf/NaN g, as PyTorch).
    ``np.maximum(0, x)``, not ``(x, 0)``: NumPy returns the second operand of an equal pair,
    so -0.0 stays -0.0 as in PyTorch's ``clamp_min`` (a printed ``-0.`` matches)."""

    f = staticmethod(lambda x: np.maximum(0, x))

    def backward(self, g):
        y = self.y
        self.fused = g.shape == y.shape and kernels.usable(g, y)  # same dtype, contiguous
        if self.fused:  # one Numba pass (shardflow/kernels/activation.py)
            return _activation_kernels.relu_backward(g, y)
        # inf/NaN at inactive units: 0, not NaN; a NaN unit passes g (torch: y <= 0 is 0)
        return _same_dtype(_grad_where(g, ~(y <= 0)), g)

    def backward_graph(self, g):
        return _gg.keep_where(g, ~(self.y <= 0))


def _make_unary(name, cls, *, float_only=True, ufunc=None, doc="", complex_ok=False):
    """Build the functional form ``name(input)`` and its in-place form ``name_(input)``.

    ``ufunc``, when given, is a NumPy ufunc equal to the forward; the in-place form then
    writes with ``ufunc(a, out=a)`` when no graph is recorded. ``complex_ok``: the op takes
    complex tensors (holomorphic; the backward conjugates, see _UnaryX).
    """
    if float_only:
        def fn(input):
            return cls.apply(_float_arg(input, name, complex_ok))
    else:
        def fn(input):
            return cls.apply(_tensor_arg(input))

    def fn_(input):
        if float_only and not (complex_ok and input.array.dtype.kind == "c"):
            _check_inplace_dtype(input, name + "_")
        if ufunc is not None and not needs_graph(input):
            a = input.array
            ufunc(a, out=a)
            input._version_counter[0] += 1
            return input
        return inplace(input, fn(input))

    fn.__name__, fn.__qualname__ = name, name
    fn_.__name__, fn_.__qualname__ = name + "_", name + "_"
    fn.__doc__ = f"``torch.{name}``: {doc or cls.__doc__}."
    fn_.__doc__ = f"In-place ``{name}``."
    return register(name)(fn), register(name + "_")(fn_)


exp, exp_ = _make_unary("exp", Exp, ufunc=np.exp, complex_ok=True)
exp2, exp2_ = _make_unary("exp2", Exp2, ufunc=np.exp2, complex_ok=True)
expm1, expm1_ = _make_unary("expm1", Expm1, ufunc=np.expm1, complex_ok=True)
log, log_ = _make_unary("log", Log, ufunc=np.log, complex_ok=True)
log2, log2_ = _make_unary("log2", Log2, ufunc=np.log2, complex_ok=True)
log10, log10_ = _make_unary("log10", Log10, ufunc=np.log10, complex_ok=True)
log1p, log1p_ = _make_unary("log1p", Log1p, ufunc=np.log1p, complex_ok=True)
sqrt, sqrt_ = _make_unary("sqrt", Sqrt, ufunc=np.sqrt, complex_ok=True)
rsqrt, rsqrt_ = _make_unary("rsqrt", Rsqrt, complex_ok=True)
sin, sin_ = _make_unary("sin", Sin, ufunc=np.sin, complex_ok=True)
cos, cos_ = _make_unary("cos", Cos, ufunc=np.cos, complex_ok=True)
tan, tan_ = _make_unary("tan", Tan, ufunc=np.tan, complex_ok=True)
tanh, tanh_ = _make_unary("tanh", Tanh, ufunc=np.tanh, complex_ok=True)
sinh, sinh_ = _make_unary("sinh", Sinh, ufunc=np.sinh, complex_ok=True)
cosh, cosh_ = _make_unary("cosh", Cosh, ufunc=np.cosh, complex_ok=True)
asin, asin_ = _make_unary("asin", Asin, ufunc=np.arcsin, complex_ok=True)
acos, acos_ = _make_unary("acos", Acos, ufunc=np.arccos, complex_ok=True)
atan, atan_ = _make_unary("atan", Atan, ufunc=np.arctan, complex_ok=True)
sigmoid, sigmoid_ = _make_unary("sigmoid", Sigmoid, complex_ok=True)
erf, erf_ = _make_unary("erf", Erf)
erfc, erfc_ = _make_unary("erfc", Erfc)
abs, abs_ = _make_unary("abs", Abs, float_only=False, ufunc=np.abs)
square, square_ = _make_unary("square", Square, float_only=False, ufunc=np.square)
register("absolute")(abs)
register("absolute_")(abs_)
register("arcsin")(asin)
register("arccos")(acos)
register("arctan")(atan)
register("special_expit", "expit")(sigmoid)
absolute, arcsin, arccos, arctan = abs, asin, acos, atan


# ---------------------------------------------------------------------------- activations
def _act_inplace(input, result, inplace_flag):
    return inplace(input, result) if inplace_flag else result


@register("relu")
def relu(input, inplace: bool = False):
    """``max(x, 0)`` (integer tensors stay integer); grad passes where the output is > 0."""
    x = _tensor_arg(input)
    refuse_complex(x, message=CLAMP_COMPLEX)
    if inplace:
        return relu_(x)
    return Relu.apply(x)


@register("relu_")
def relu_(input):
    """In-place relu (``np.maximum(0, a, out=a)`` when no graph is recorded)."""
    refuse_complex(input, message=CLAMP_COMPLEX)
    if not needs_graph(input):
        a = input.array
        np.maximum(0, a, out=a)  # -0.0 stays -0.0, as Relu.f
        input._version_counter[0] += 1
        return input
    return inplace(input, Relu.apply(input))


class Hardtanh(Function):
    """clip(x, lo, hi); grad passes strictly inside (lo, hi) (PyTorch's convention)."""

    save_inputs = (0,)

    def forward(self, x, lo=-1.0, hi=1.0):
        self.x, self.lo, self.hi = x, lo, hi
        return _same_dtype(np.clip(x, lo, hi), x)

    def backward(self, g):
        x = self.x
        return _grad_where(g, (x > self.lo) & (x < self.hi))

    def backward_graph(self, g):
        x = self.x
        return _gg.keep_where(g, (x > self.lo) & (x < self.hi))


@register("hardtanh")
def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """``clamp(x, min_val, max_val)`` with zero grad at and outside the bounds."""
    x = _tensor_arg(input)
    refuse_complex(x, message=CLAMP_COMPLEX)
    return _act_inplace(x, Hardtanh.apply(x, lo=min_val, hi=max_val), inplace)


@register("hardtanh_")
def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    refuse_complex(input, message=CLAMP_COMPLEX)
    return inplace(input, Hardtanh.apply(input, lo=min_val, hi=max_val))


@register("relu6")
def relu6(input, inplace: bool = False):
    """``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


_GELU_A = 0.044715


def _gelu_tanh_fwd(y, x, scratch):
    """y = x/2 (1 + tanh(u)), u = c (x + a x^3): 7 passes over one cached block."""
    u = scratch[0]
    np.multiply(x, x, out=u)
    u *= _SQRT_2_PI * _GELU_A
    u += _SQRT_2_PI
    u *= x  # u = c x + c a x^3
    np.tanh(u, out=u)
    np.multiply(x, 0.5, out=y)  # x/2
    u *= y
    y += u


def _gelu_tanh_bwd(gx, x, g, scratch):
    """gx = g ((1 + t)/2 + x/2 (1 - t^2) c (1 + 3 a x^2)), recomputing t = tanh(u)."""
    k, t = scratch
    np.multiply(x, x, out=k)
    np.multiply(k, _SQRT_2_PI * _GELU_A, out=t)
    t += _SQRT_2_PI
    t *= x
    np.tanh(t, out=t)
    k *= 3.0 * _GELU_A
    k += 1.0
    k *= x
    k *= 0.5 * _SQRT_2_PI  # x/2 c (1 + 3 a x^2)
    np.multiply(t, t, out=gx)
    np.subtract(1.0, gx, out=gx)  # 1 - t^2
    k *= gx
    t += 1.0
    t *= 0.5
    k += t
    np.multiply(k, g, out=gx)


def _gelu_exact_fwd(y, x, scratch):
    """y = x Phi(x), Phi(x) = (1 + erf(x / sqrt2)) / 2."""
    u = scratch[0]
    np.multiply(x, _SQRT1_2, out=u)
    cdf = erf_array(u)
    cdf += 1.0
    cdf *= 0.5
    np.multiply(cdf, x, out=y)


def _gelu_exact_bwd(gx, x, g, scratch):
    """gx = g (Phi(x) + x phi(x)), phi(x) = exp(-x^2/2) / sqrt(2 pi)."""
    u, d = scratch
    np.multiply(x, _SQRT1_2, out=u)
    cdf = erf_array(u)
    cdf += 1.0
    cdf *= 0.5
    np.multiply(x, x, out=d)
    d *= -0.5
    np.exp(d, out=d)
    d *= _1_SQRT2PI
    d *= x
    d += cdf
    np.multiply(d, g, out=gx)


def _blockable(a):
    return type(a) is np.ndarray and a.dtype in (np.float32, np.float64)


class Gelu(Function):
    """Exact: y = x Phi(x), Phi(x) = (1 + erf(x/sqrt2))/2, dy = Phi(x) + x phi(x).
    'tanh': y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
    dy = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3*0.044715 x^2).

    Backward recomputes tanh/erf from the saved input instead of keeping a second
    activation-sized array. NumPy float32/float64 arrays run the kernels cache-blocked
    (``ops/blocked.py``); other arrays (CuPy, half precision) run them on the whole array.
    """

    save_inputs = (0,)

    def forward(self, x, approximate="none"):
        self.x, self.approx = x, approximate
        if x.dtype.itemsize == 2:  # float16/bfloat16: 1 + erf/tanh cancels below x = -2 in
            # half precision (gelu(-5.07) gave -0.0) and still loses digits in float32; compute
            # in float64 and round once (torch's float32 opmath is within one half step of it)
            return self.forward(x.astype(np.float64), approximate).astype(x.dtype)
        self.fused = x.size > 0 and kernels.usable(x)
        if self.fused:  # one Numba pass (shardflow/kernels/gelu.py)
            return _gelu_kernels.gelu_forward(x, approximate)
        if x.size > 0 and _cuda_kernels.usable(x):  # one CuPy launch (shardflow/kernels/cuda.py)
            self.fused = "cuda"
            return _cuda_kernels.gelu_forward(x, approximate)
        kernel = _gelu_tanh_fwd if approximate == "tanh" else _gelu_exact_fwd
        if _blockable(x):
            return run_blocked(kernel, np.empty(x.shape, x.dtype), x, n_scratch=1)
        y = _empty_like(x)
        kernel(y, x, [_empty_like(x)])
        return y

    def backward(self, g):
        x = self.x  # float64 for a half-precision input (forward kept that copy)
        out_dtype = g.dtype
        g = g.astype(x.dtype, copy=False)
        if g.shape != x.shape:
            g = np.broadcast_to(g, x.shape)
        if x.dtype != out_dtype and out_dtype.itemsize == 2:
            return self._backward(x, g).astype(out_dtype)
        return self._backward(x, g)

    def _backward(self, x, g):
        if self.fused == "cuda":
            return _cuda_kernels.gelu_backward(x, get_array_module(g).ascontiguousarray(g), self.approx)
        if self.fused:
            return _gelu_kernels.gelu_backward(x, np.ascontiguousarray(g), self.approx)
        kernel = _gelu_tanh_bwd if self.approx == "tanh" else _gelu_exact_bwd
        if _blockable(x):
            return run_blocked(kernel, np.empty(x.shape, x.dtype), x, g)
        gx = _empty_like(x)
        kernel(gx, x, g, [_empty_like(x), _empty_like(x)])
        return gx

    def backward_graph(self, g):
        x = self.saved_input(0, self.x)
        if self.approx == "tanh":
            x2 = x * x
            t = ((x2 * _GELU_A + 1.0) * x * _SQRT_2_PI).tanh()
            d = (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * ((x2 * (3.0 * _GELU_A) + 1.0) * _SQRT_2_PI)
        else:
            d = ((x * _SQRT1_2).erf() + 1.0) * 0.5 + x * ((x * x * -0.5).exp() * _1_SQRT2PI)
        return g * d


def _empty_like(a):
    return get_array_module(a).empty(a.shape, a.dtype)


@register("gelu")
def gelu(input, approximate: str = "none"):
    """GELU: ``x * Phi(x)`` (``approximate='none'``, erf-based) or the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return Gelu.apply(_float_arg(input, "gelu"), approximate=approximate)


class Silu(Function):
    """y = x s(x) = x / (1 + exp(-x)); dy = s (1 + x (1 - s)).

    Evaluated as PyTorch's CPU kernel does, so that the results are its bits: the forward
    divides by ``1 + exp(-x)`` (not ``x * sigmoid(x)``: a second rounding), the backward
    is ``(g * s) * (1 + x (1 - s))`` in that order, and float16/bfloat16 run in float32
    (PyTorch's opmath) with one rounding at the end (half-precision steps differed from
    PyTorch's in a quarter of the elements, by one unit in the last place).
    """

    save_inputs = (0,)

    def forward(self, x):
        w = _upcast(x)
        with np.errstate(over="ignore"):  # exp(-x) is inf below x = -88: y = x / inf = -0
            d = _ip(np.exp, -w)  # (in place: each fresh large array costs its page faults)
        d += 1.0
        self.x, self.d = w, d
        return _same_dtype(w / d, x)

    def backward(self, g):
        x = self.x
        s = 1.0 / self.d  # (self.d stays: a retained graph runs backward again)
        t = 1.0 - s
        t *= x
        t += 1.0
        r = _ip(np.multiply, s, g.astype(x.dtype, copy=False))
        r *= t
        return _same_dtype(r, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        s = x.sigmoid()
        return g * (s * (x * (1.0 - s) + 1.0))


@register("silu")
def silu(input, inplace: bool = False):
    """SiLU / swish: ``x * sigmoid(x)``."""
    x = _float_arg(input, "silu", complex_ok=True)
    if x.array.dtype.kind == "c":  # torch's complex silu: x * sigmoid(x), both holomorphic
        return _act_inplace(x, x * sigmoid(x), inplace)
    return _act_inplace(x, Silu.apply(x), inplace)


class Softplus(Function):
    """y = log(1 + exp(beta x)) / beta, or x where beta x > threshold;
    dy = sigmoid(beta x) below the threshold, 1 above."""

    save_inputs = (0,)

    def forward(self, x, beta=1.0, threshold=20.0):
        self.x, self.beta, self.threshold = x, beta, threshold
        bx = x * beta if beta != 1 else x
        y = softplus_array(bx)
        if beta != 1:
            y /= beta
        above = bx > threshold
        if above.any():  # rare with the default threshold: fix those elements only
            y[above] = x[above]
        self.above = above
        return _same_dtype(y, x)

    def backward(self, g):
        bx = self.x * self.beta if self.beta != 1 else self.x
        d = sigmoid_array(bx)
        if self.above.any():
            d[self.above] = 1.0
        d *= g
        return _same_dtype(d, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        d = (x * self.beta if self.beta != 1 else x).sigmoid()
        if self.above.any():
            d = _gg.op("where")(_wrap(self.above), 1.0, d)
        return g * d


@register("softplus")
def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (in units of beta x)."""
    return Softplus.apply(_float_arg(input, "softplus"), beta=beta, threshold=threshold)


class LeakyRelu(Function):
    """y = x if x > 0 else slope x (as max/min of x and slope x); dy = 1 or slope."""

    save_inputs = (0,)

    def forward(self, x, slope=0.01):
        self.x, self.slope = x, slope
        sx = x * slope
        return _same_dtype(_ip(np.maximum if slope <= 1 else np.minimum, sx, x), x)

    def backward(self, g):
        slope = self.slope
        d = _mask(self.x > 0, g.dtype)
        if slope != 0:
            d *= 1.0 - slope
            d += slope
        d *= g
        return _same_dtype(d, g)

    def backward_graph(self, g):
        d = _mask(self.x > 0, g.array.dtype)
        if self.slope != 0:
            d = d * (1.0 - self.slope) + self.slope
        return g * _gg.const(d, g)


@register("leaky_relu")
def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    x = _float_arg(input, "leaky_relu")
    return _act_inplace(x, LeakyRelu.apply(x, slope=negative_slope), inplace)


@register("leaky_relu_")
def leaky_relu_(input, negative_slope: float = 0.01):
    return inplace(input, LeakyRelu.apply(input, slope=negative_slope))


class Elu(Function):
    """PyTorch's general ELU: y = scale x (x > 0), scale alpha expm1(x input_scale) (x <= 0),
    computed as scale (max(x, 0) + alpha expm1(min(x, 0) input_scale));
    dy = scale (x > 0), scale alpha input_scale exp(x input_scale) (x <= 0)."""

    save_inputs = (0,)

    def forward(self, x, alpha=1.0, scale=1.0, input_scale=1.0):
        self.x, self.alpha, self.scale, self.input_scale = x, alpha, scale, input_scale
        # (0, x) operand order: NumPy returns the second of an equal pair, so x = -0.0 gives
        # -0.0 + -0.0 = -0.0, as PyTorch's alpha * expm1(-0.0)
        e = np.minimum(0, x)
        if input_scale != 1:
            e *= input_scale
        e = _ip(np.expm1, e)
        self.e = e
        y = e * alpha
        y += np.maximum(0, x)
        if scale != 1:
            y *= scale
        return _same_dtype(y, x)

    def backward(self, g):
        # x <= 0: alpha input_scale (e + 1); x > 0: 1 (e == 0 there).
        k = self.alpha * self.input_scale
        pos = _mask(self.x > 0, g.dtype)
        d = self.e + 1.0
        d *= k
        d *= 1.0 - pos
        d += pos
        if self.scale != 1:
            d *= self.scale
        d *= g
        return _same_dtype(d, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        pos = _mask(self.x > 0, g.array.dtype)
        e = x.clamp(max=0.0)  # exp of the negative part only (no overflow; 0 slope above)
        if self.input_scale != 1:
            e = e * self.input_scale
        d = e.exp() * (self.alpha * self.input_scale) * _gg.const(1.0 - pos, g) + _gg.const(pos, g)
        return g * (d * self.scale if self.scale != 1 else d)


@register("elu")
def elu(input, alpha: float = 1.0, inplace: bool = False):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    x = _float_arg(input, "elu")
    return _act_inplace(x, Elu.apply(x, alpha=alpha), inplace)


@register("elu_")
def elu_(input, alpha: float = 1.0):
    return inplace(input, Elu.apply(input, alpha=alpha))


@register("selu")
def selu(input, inplace: bool = False):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    x = _float_arg(input, "selu")
    return _act_inplace(x, Elu.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE), inplace)


@register("selu_")
def selu_(input):
    return inplace(input, Elu.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE))


@register("celu")
def celu(input, alpha: float = 1.0, inplace: bool = False):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ValueError("celu: alpha must be nonzero, got 0")
    x = _float_arg(input, "celu")
    return _act_inplace(x, Elu.apply(x, alpha=alpha, input_scale=1.0 / alpha), inplace)


class Mish(Function):
    """y = x tanh(softplus(x)); dy = t + x s (1 - t^2) with t = tanh(softplus x), s = sigmoid x."""

    save_inputs = (0,)

    def forward(self, x):
        t = np.tanh(softplus_array(x))
        self.x, self.t = x, t
        return _same_dtype(x * t, x)

    def backward(self, g):
        x, t = self.x, self.t
        d = 1.0 - t * t
        d *= sigmoid_array(x)
        d *= x
        d += t
        d *= g
        return _same_dtype(d, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        t = _gg.op("softplus")(x).tanh()
        return g * (t + x * x.sigmoid() * (1.0 - t * t))


@register("mish")
def mish(input, inplace: bool = False):
    x = _float_arg(input, "mish")
    return _act_inplace(x, Mish.apply(x), inplace)


# torch's hardsigmoid backward kernel multiplies by ``1.0f / 6.0f`` for every dtype, so its
# float64 gradient is 0.1666666716337204 (float32's 1/6), not 1/6: the same constant here
# keeps float64 programs (MobileNetV3's SqueezeExcitation) equal to torch's to the last bit
_SIXTH_F32 = float(np.float32(1.0) / np.float32(6.0))


class Hardsigmoid(Function):
    """y = relu6(x + 3) / 6; dy = 1/6 on (-3, 3), with torch's float32 constant 1/6 in every
    dtype (see ``_SIXTH_F32``)."""

    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        return _same_dtype(np.clip(x / 6.0 + 0.5, 0.0, 1.0), x)

    def backward(self, g):
        x = self.x
        d = _mask((x > -3.0) & (x < 3.0), g.dtype)
        d *= g
        d *= _SIXTH_F32
        return _same_dtype(d, g)

    def backward_graph(self, g):
        x = self.x
        return _gg.keep_where(g, (x > -3.0) & (x < 3.0)) * _SIXTH_F32


@register("hardsigmoid")
def hardsigmoid(input, inplace: bool = False):
    x = _float_arg(input, "hardsigmoid")
    return _act_inplace(x, Hardsigmoid.apply(x), inplace)


class Hardswish(Function):
    """y = x relu6(x + 3) / 6; dy = 0 (x <= -3), x/3 + 1/2 (-3 < x < 3), 1 (x >= 3 or NaN)."""

    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        r = np.clip(x + 3.0, 0.0, 6.0)
        r *= x
        r /= 6.0
        return _same_dtype(r, x)

    # PyTorch's branches: x <= -3 -> 0, x < 3 -> x/3 + 1/2, else (x >= 3, or NaN) -> 1
    def backward(self, g):
        x = self.x
        d = x / 3.0
        d += 0.5
        d = np.where(x < 3.0, d, d.dtype.type(1))
        d[x <= -3.0] = 0
        d *= g
        return _same_dtype(d, g)

    def backward_graph(self, g):
        x = self.saved_input(0)
        mid = (self.x > -3.0) & (self.x < 3.0)
        upper = ~((self.x <= -3.0) | (self.x < 3.0))
        return _gg.keep_where(g * (x / 3.0 + 0.5), mid) + _gg.keep_where(g, upper)


@register("hardswish")
def hardswish(input, inplace: bool = False):
    x = _float_arg(input, "hardswish")
    return _act_inplace(x, Hardswish.apply(x), inplace)


class Logsigmoid(Function):
    """y = min(x, 0) - log1p(exp(-|x|)); dy = 1 - sigmoid(x) = sigmoid(-x)."""

    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        xc = _upcast(x)
        return _same_dtype(np.minimum(xc, 0) - _log1p_exp_neg_abs(xc), x)

    def backward(self, g):
        return _same_dtype(g * sigmoid_array(-self.x), g)

    def backward_graph(self, g):
        return g * (-self.saved_input(0)).sigmoid()


@register("logsigmoid")
def logsigmoid(input):
    return Logsigmoid.apply(_float_arg(input, "logsigmoid"))


# ---------------------------------------------------------------------------- pow
class PowScalar(Function):
    """y = x^e (e a number); dx = g e x^(e-1) (0 when e == 0)."""

    save_inputs = (0,)

    def forward(self, x, e=2):
        self.x, self.e = x, e
        if e == 2:
            return x * x
        if e == 0.5:
            return np.sqrt(x)
        if x.dtype.kind in "fV" and x.dtype != np.float16:
            # torch's pow kernel writes these exponents as products and quotients, each op
            # rounded (bfloat16 too, in its vectorised ops; float16 goes through float and
            # rounds once, as np.power): np.power was an ulp off in a third of float32
            # ``x.pow(3)`` (GPT-2's tanh-GELU) and bfloat16 ``x ** 3`` / ``x ** -2``
            if e == 3:
                return x * x * x
            if e == -2:
                return x.dtype.type(1) / (x * x)
            if e == -0.5 and x.dtype.kind == "f":
                return x.dtype.type(1) / np.sqrt(x)
        return as_dtype_of(np.power(x, e), x)

    def backward(self, g):
        x, e = self.x, self.e
        if e == 0:
            return np.zeros_like(g)
        if e == 1:
            return g
        if x.dtype.kind == "c":  # complex x: g * conj(dy/dx) (conjugate Wirtinger, as PyTorch)
            return g * np.conjugate(e * np.power(x, e - 1))
        if e == 2:
            return as_dtype_of(g * (2.0 * x), g)
        return _same_dtype(g * (e * np.power(x, e - 1)), g)

    def backward_graph(self, g):
        e = self.e
        if e == 0:
            return g * 0.0
        if e == 1:
            return g
        x = self.saved_input(0)
        d = x * 2.0 if e == 2 else x ** (e - 1) * e
        return g * _gg.conj(d)


class ScalarPow(Function):
    """y = s^x (s a number); dx = g y ln(s) (0 where s == 0 and x >= 0)."""

    save_inputs = (0,)
    save_output = True

    def forward(self, x, s=2.0):
        self.x, self.s = x, s
        y = as_dtype_of(np.power(s, x), x)
        self.y = y
        return y

    def backward(self, g):
        s = self.s
        y = self.y.conjugate() if self.y.dtype.kind == "c" else self.y  # g * conj(dy/dx)
        if self.x.dtype.kind == "c":  # complex x: s^x = exp(x log s) for any s
            return g * (y * np.conjugate(np.log(complex(s))))
        if s == 0:
            return np.where(self.x >= 0, 0.0, g * y * -np.inf).astype(g.dtype)
        with np.errstate(invalid="ignore"):
            return as_dtype_of(g * (y * (math.log(s) if s > 0 else math.nan)), g)

    def backward_graph(self, g):
        s = self.s
        y = _gg.conj(self.saved_output(0))
        if self.x.dtype.kind == "c":
            return g * (y * np.conjugate(np.log(complex(s))))
        if s == 0:
            return g * y * _gg.const(np.where(self.x >= 0, 0.0, -np.inf), g)
        return g * (y * (math.log(s) if s > 0 else math.nan))


class PowTensor(Function):
    """y = a^b; da = g b a^(b-1) (0 where b == 0); db = g y ln(a) (0 where a == 0, b >= 0)."""

    save_inputs = (0, 1)
    save_output = True

    def forward(self, a, b):
        self.a, self.b = a, b
        y = np.power(a, b)
        self.y = y
        return y

    def backward(self, g):
        a, b = self.a, self.b
        if a.dtype.kind == "c":
            return self._complex_backward(g)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                ga = np.where(b == 0, 0.0, g * b * np.power(a, b - 1)).astype(g.dtype, copy=False)
                ga = unbroadcast(ga, a.shape)
            if self.needs_input_grad[1]:
                gb = np.where((a == 0) & (b >= 0), 0.0, g * self.y * np.log(a))
                gb = unbroadcast(gb.astype(g.dtype, copy=False), b.shape)
        return ga, gb

    def _complex_backward(self, g):
        """g * conj(dy/da), g * conj(dy/db) (conjugate Wirtinger, as PyTorch); 0 where b == 0
        (for a) and where a == 0 (for b)."""
        a, b = self.a, self.b
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                ga = np.where(b == 0, 0, g * np.conjugate(b * np.power(a, b - 1)))
                ga = unbroadcast(ga.astype(g.dtype, copy=False), a.shape)
            if self.needs_input_grad[1]:
                gb = np.where(a == 0, 0, g * np.conjugate(self.y * np.log(a)))
                gb = unbroadcast(gb.astype(g.dtype, copy=False), b.shape)
        return ga, gb

    def backward_graph(self, g):
        a, b = self.saved_input(0), self.saved_input(1)
        where = _gg.op("where")
        ga = gb = None
        cx = self.a.dtype.kind == "c"
        if self.needs_input_grad[0]:
            ga = where(_wrap(np.broadcast_to(self.b == 0, self._out_shape)), 0.0,
                       g * _gg.conj(b * a ** (b - 1.0)))
        if self.needs_input_grad[1]:
            zero = (self.a == 0) if cx else (self.a == 0) & (self.b >= 0)
            zero = np.broadcast_to(zero, self._out_shape)
            gb = where(_wrap(zero), 0.0, g * _gg.conj(self.saved_output(0) * a.log()))
        return ga, gb


@register("pow")
def pow(input, exponent):
    """``input ** exponent`` for tensor**number, number**tensor and tensor**tensor."""
    a, b = promote(input, exponent)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return PowTensor.apply(a, b)
    if isinstance(a, Tensor):
        if not _is_float_array(a.array) and isinstance(b, int) and b < 0:
            raise RuntimeError(
                f"Integers to negative integer powers are not allowed (got {a.dtype} tensor "
                f"** {b}); use input.float() ** {b}"
            )
        return PowScalar.apply(a, e=b)
    return ScalarPow.apply(b, s=a)


@register("pow_")
def pow_(input, exponent):
    if isinstance(exponent, _SCALARS) and not needs_graph(input):
        a = input.array
        if _is_float_array(a) or not isinstance(exponent, float):
            np.power(a, exponent, out=a)
            input._version_counter[0] += 1
            return input
    return inplace(input, pow(input, exponent))


# ---------------------------------------------------------------------------- clamp
class ClampScalar(Function):
    """y = min(max(x, lo), hi) with number bounds; dx = g on [lo, hi]."""

    save_inputs = (0,)

    def forward(self, x, lo=None, hi=None):
        self.x, self.lo, self.hi = x, lo, hi
        if lo is not None and hi is not None:
            return as_dtype_of(np.minimum(np.maximum(x, lo), hi), x)
        return as_dtype_of(np.maximum(x, lo) if lo is not None else np.minimum(x, hi), x)

    def backward(self, g):
        x, lo, hi = self.x, self.lo, self.hi
        if lo is not None and hi is not None:
            m = (x >= lo) & (x <= hi)
        elif lo is not None:
            m = x >= lo
        else:
            m = x <= hi
        return _grad_where(g, m)

    def backward_graph(self, g):
        x, lo, hi = self.x, self.lo, self.hi
        if lo is not None and hi is not None:
            m = (x >= lo) & (x <= hi)
        else:
            m = x >= lo if lo is not None else x <= hi
        return _gg.keep_where(g, m)


class ClampTensor(Function):
    """Tensor bounds (either may be None). Gradients follow PyTorch's clamp_backward_min_max:
    x gets g where lo <= x <= hi; lo gets g where x < lo (and lo < hi); hi gets g where
    x > hi (or hi < lo)."""

    save_inputs = None

    def forward(self, x, lo, hi):
        self.x, self.lo, self.hi = x, lo, hi
        y = x
        if lo is not None:
            y = np.maximum(y, lo)
        if hi is not None:
            y = np.minimum(y, hi)
        if y is x:
            y = x.copy()
        return y

    def backward(self, g):
        x, lo, hi = self.x, self.lo, self.hi
        need = self.needs_input_grad
        gx = glo = ghi = None
        if lo is not None and hi is not None:
            if need[0]:
                gx = _grad_where(g, (x >= lo) & (x <= hi))
            if need[1]:
                glo = _grad_where(g, (x < lo) & (lo < hi))
            if need[2]:
                ghi = _grad_where(g, (x > hi) | (hi < lo))
        elif lo is not None:
            if need[0]:
                gx = _grad_where(g, x >= lo)
            if need[1]:
                glo = _grad_where(g, x < lo)
        elif hi is not None:
            if need[0]:
                gx = _grad_where(g, x <= hi)
            if need[2]:
                ghi = _grad_where(g, x > hi)
        if gx is not None:
            gx = unbroadcast(gx, x.shape)
        if glo is not None:
            glo = unbroadcast(glo, lo.shape)
        if ghi is not None:
            ghi = unbroadcast(ghi, hi.shape)
        return gx, glo, ghi

    def backward_graph(self, g):
        # piecewise linear: the masks are constants, the gradients linear in g
        x, lo, hi = self.x, self.lo, self.hi
        need = self.needs_input_grad
        out = self._out_shape
        gx = glo = ghi = None
        if lo is not None and hi is not None:
            mx, mlo, mhi = (x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo)
        elif lo is not None:
            mx, mlo, mhi = x >= lo, x < lo, None
        else:
            mx, mlo, mhi = x <= hi, None, x > hi
        if need[0]:
            gx = _gg.keep_where(g, np.broadcast_to(mx, out))
        if need[1] and mlo is not None:
            glo = _gg.keep_where(g, np.broadcast_to(mlo, out))
        if need[2] and mhi is not None:
            ghi = _gg.keep_where(g, np.broadcast_to(mhi, out))
        return gx, glo, ghi


def _clamp_operands(input, min, max):
    refuse_complex(input, message=CLAMP_COMPLEX)
    if min is None and max is None:
        raise RuntimeError(
            "clamp: at least one of 'min' or 'max' must not be None; pass clamp(x, min=...) "
            "and/or max=..."
        )
    x = _tensor_arg(input)
    ops = [(x.dtype, x.array.ndim)]
    for v in (min, max):
        if isinstance(v, Tensor):
            ops.append((v.dtype, v.array.ndim))
        elif v is not None:
            ops.append(v)
    rd = result_type(ops)
    return x, rd


def _integer_bound(v, rd):
    """A Python int bound of an integer clamp as torch converts it: checked against the
    dtype's range (RuntimeError past it) and wrapped for an unsigned dtype (uint8: -3 -> 253)."""
    if rd.np.kind in "iu" and isinstance(v, int) and not isinstance(v, bool):
        if not -(1 << 63) <= v < (1 << 64):
            raise OverflowError("int too big to convert")  # torch's, before any range check
        return fill_scalar(v, rd.np)
    return v


@register("clamp", "clip")
def clamp(input, min=None, max=None):
    """``min(max(input, min), max)``; ``min``/``max`` are numbers or Tensors (or None)."""
    x, rd = _clamp_operands(input, min, max)
    min, max = _integer_bound(min, rd), _integer_bound(max, rd)
    from .conversion import to_dtype

    if x.array.dtype != rd.np:
        x = to_dtype(x, rd)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        xp = get_array_module(x.array)  # a number bound goes to x's device
        lo = to_dtype(min, rd) if isinstance(min, Tensor) else (
            None if min is None else _wrap(xp.asarray(min, dtype=rd.np)))
        hi = to_dtype(max, rd) if isinstance(max, Tensor) else (
            None if max is None else _wrap(xp.asarray(max, dtype=rd.np)))
        return ClampTensor.apply(x, lo, hi)
    return ClampScalar.apply(x, lo=min, hi=max)


clip = clamp


@register("clamp_min")
def clamp_min(input, min):
    return clamp(input, min, None)


@register("clamp_max")
def clamp_max(input, max):
    return clamp(input, None, max)


@register("clamp_", "clip_")
def clamp_(input, min=None, max=None):
    """In-place clamp: ``np.clip(a, min, max, out=a)`` when no graph is recorded."""
    refuse_complex(input, message=CLAMP_COMPLEX)
    if isinstance(input, Tensor):
        min, max = _integer_bound(min, input.dtype), _integer_bound(max, input.dtype)
    if (
        not isinstance(min, Tensor) and not isinstance(max, Tensor)
        and not needs_graph(input)
        and (min is not None or max is not None)
        and (_is_float_array(input.array)
             or not (isinstance(min, float) or isinstance(max, float)))
    ):
        a = input.array
        if min is not None and max is not None:
            np.clip(a, min, max, out=a)
        elif min is not None:
            np.maximum(a, min, out=a)
        else:
            np.minimum(a, max, out=a)
        input._version_counter[0] += 1
        return input
    return inplace(input, clamp(input, min, max))


clip_ = clamp_


@register("clamp_min_")
def clamp_min_(input, min):
    return clamp_(input, min, None)


@register("clamp_max_")
def clamp_max_(input, max):
    return clamp_(input, None, max)


# ---------------------------------------------------------------------------- max / min
class _BinaryMaxMin(Function):
    """maximum/minimum (NaN-propagating) and fmax/fmin (NaN-ignoring).

    Gradients as in PyTorch: maximum/minimum split g in half where a == b; fmax/fmin send g
    to the operand that was chosen (a wins ties)."""

    save_inputs = (0, 1)
    kind = "max"  # max | min | fmax | fmin

    def forward(self, a, b):
        self.a, self.b = a, b
        return _UFUNCS[self.kind](a, b)

    def backward(self, g):
        a, b, kind = self.a, self.b, self.kind
        ga = gb = None
        dt = g.dtype
        if kind in ("max", "min"):
            # coefficient 1, minus 1 where the operand lost, minus 1/2 on ties (NaN: 1)
            tie = _mask(a == b, dt)
            tie *= 0.5
            if self.needs_input_grad[0]:
                ca = 1.0 - _mask((a < b) if kind == "max" else (a > b), dt)
                ca -= tie
                ga = g * ca
            if self.needs_input_grad[1]:
                cb = 1.0 - _mask((a > b) if kind == "max" else (a < b), dt)
                cb -= tie
                gb = g * cb
        else:
            pick_a = _mask(((a >= b) if kind == "fmax" else (a <= b)) | np.isnan(b), dt)
            if self.needs_input_grad[0]:
                ga = g * pick_a
            if self.needs_input_grad[1]:
                gb = g * (1.0 - pick_a)
        if ga is not None:
            ga = unbroadcast(ga, _shape(a))
        if gb is not None:
            gb = unbroadcast(gb, _shape(b))
        return ga, gb

    def backward_graph(self, g):
        # the coefficients are piecewise constant: the gradient is linear in g
        a, b, kind = self.a, self.b, self.kind
        dt = g.array.dtype
        if kind in ("max", "min"):
            tie = _mask(a == b, dt) * 0.5
            ca = 1.0 - _mask((a < b) if kind == "max" else (a > b), dt) - tie
            cb = 1.0 - _mask((a > b) if kind == "max" else (a < b), dt) - tie
        else:
            ca = _mask(((a >= b) if kind == "fmax" else (a <= b)) | np.isnan(b), dt)
            cb = 1.0 - ca
        return (g * _gg.const(ca, g) if self.needs_input_grad[0] else None,
                g * _gg.const(cb, g) if self.needs_input_grad[1] else None)


_UFUNCS = {"max": np.maximum, "min": np.minimum, "fmax": np.fmax, "fmin": np.fmin}


class Maximum(_BinaryMaxMin):
    kind = "max"


class Minimum(_BinaryMaxMin):
    kind = "min"


class Fmax(_BinaryMaxMin):
    kind = "fmax"


class Fmin(_BinaryMaxMin):
    kind = "fmin"


def _binary(cls, input, other):
    a, b = promote(input, other)
    for t in (a, b):  # complex numbers have no order: torch's words
        refuse_complex_runtime(t, f"{cls.__name__.lower()} not implemented for complex tensors.")
    if not isinstance(b, Tensor):  # a number goes to the tensor's device
        b = _wrap(get_array_module(a.array).asarray(b, dtype=a.array.dtype))
    if not isinstance(a, Tensor):
        a = _wrap(get_array_module(b.array).asarray(a, dtype=b.array.dtype))
    return cls.apply(a, b)


@register("maximum")
def maximum(input, other):
    """Elementwise max, NaN-propagating; ties split the gradient in half."""
    return _binary(Maximum, input, other)


@register("minimum")
def minimum(input, other):
    """Elementwise min, NaN-propagating; ties split the gradient in half."""
    return _binary(Minimum, input, other)


@register("fmax")
def fmax(input, other):
    """Elementwise max ignoring NaN (a NaN loses to a number)."""
    return _binary(Fmax, input, other)


@register("fmin")
def fmin(input, other):
    """Elementwise min ignoring NaN (a NaN loses to a number)."""
    return _binary(Fmin, input, other)


# ---------------------------------------------------------------------------- where
class Where(Function):
    """y = cond ? a : b; da = g where cond, db = g elsewhere (each reduced to its shape)."""

    save_inputs = (0,)

    def forward(self, cond, a, b):
        self.cond, self.sa, self.sb = cond, _shape(a), _shape(b)
        y = np.where(cond, a, b)  # a bfloat16 array with a Python float gives float64 here
        return as_dtype_of(y, a, b) if hasattr(a, "dtype") else as_dtype_of(y, b, a)

    def backward(self, g):
        cond = self.cond
        ga = gb = None
        if self.needs_input_grad[1]:
            ga = unbroadcast(np.where(cond, g, 0.0).astype(g.dtype, copy=False), self.sa)
        if self.needs_input_grad[2]:
            gb = unbroadcast(np.where(cond, 0.0, g).astype(g.dtype, copy=False), self.sb)
        return None, ga, gb

    def backward_graph(self, g):
        cond = _wrap(np.broadcast_to(self.cond, g.shape))
        where = _gg.op("where")
        ga = where(cond, g, 0.0) if self.needs_input_grad[1] else None
        gb = where(cond, 0.0, g) if self.needs_input_grad[2] else None
        return None, ga, gb


@register("where")
def where(condition, input=None, other=None):
    """``where(cond, a, b)``: ``a`` where ``cond`` else ``b`` (numbers allowed for a/b; their
    dtypes promote). ``where(cond)`` alone is ``nonzero(cond, as_tuple=True)``."""
    cond = condition if isinstance(condition, Tensor) else as_tensor_arg(condition, "condition")
    c = cond.array
    if input is None and other is None:
        if c.ndim == 0:  # nonzero(as_tuple=True) of a 0-d condition: one index tensor (NumPy refuses 0-d)
            return (_wrap(np.zeros(int(bool(c)), np.int64)),)
        return tuple(_wrap(i.astype(np.int64, copy=False)) for i in np.nonzero(c))
    if input is None or other is None:
        raise TypeError("where() expects where(condition) or where(condition, input, other)")
    if c.dtype != np.bool_:
        if isinstance(input, Tensor) and input.array.dtype == np.bool_:
            # Tensor method form x.where(cond, y) arrives as where(x, cond, y)
            return where(input, condition, other)
        if c.dtype != np.uint8:
            raise RuntimeError(
                f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                f"{cond.dtype}; pass a comparison such as x > 0, or cond.bool()"
            )
        c = c.astype(np.bool_)
    ta, tb = isinstance(input, Tensor), isinstance(other, Tensor)
    if not ta and not tb:
        rd = result_type([input, other])
        # NumPy scalars of rd: CuPy takes those with a device condition, not 0-d NumPy arrays
        return _wrap(as_array(np.where(c, rd.np.type(input), rd.np.type(other))))
    a, b = promote(input, other)
    try:
        return Where.apply(_wrap(c), a, b)
    except ValueError:
        raise RuntimeError(
            f"where: condition {c.shape}, input {_shape(getattr(a, 'array', a))} and other "
            f"{_shape(getattr(b, 'array', b))} shapes do not broadcast"
        ) from None


# ---------------------------------------------------------------------------- lerp
def _lerp_array(s, e, w, out=None):
    """PyTorch's formula: s + w (e - s) for |w| < 0.5, else e - (e - s)(1 - w).

    For float32 and 2-byte floats PyTorch's CPU kernel computes in float32 with one fused
    multiply-add (a single rounding of ``s + w*d``); an unfused product and sum round twice
    and differ from it by 1 ulp in about one element in five (an EMA's ``lerp_`` then drifts
    from torch's step by step). Those dtypes are computed here in float64 from the float32
    ``d = e - s`` and ``1 - w`` (exact there), then rounded once to float32 (then to the 2-byte
    dtype, as PyTorch rounds its float32 result). float64 keeps the unfused form: NumPy has
    no wider type to fuse in, so it may differ from PyTorch's by 1 ulp."""
    if isinstance(s, np.ndarray) and s.dtype.name in _FUSED_LERP_DTYPES:  # host arrays
        return _fused_lerp(s, e, w, out)
    d = np.subtract(e, s)
    if isinstance(w, _SCALARS):
        if builtins.abs(w) < 0.5:
            d *= w
            return np.add(s, d, out=out)
        d *= 1.0 - w
        return np.subtract(e, d, out=out)
    small = np.abs(w) < 0.5
    r = np.where(small, s + w * d, e - d * (1.0 - w))
    if out is not None:
        out[...] = r
        return out
    return r


_FUSED_LERP_DTYPES = ("float32", "float16", "bfloat16")


def _fused_lerp(s, e, w, out):
    """``_lerp_array`` for float32/float16/bfloat16: PyTorch's fused float32 arithmetic."""
    s32, e32 = np.asarray(s, np.float32), np.asarray(e, np.float32)
    d = np.subtract(e32, s32).astype(np.float64)  # PyTorch's float32 difference
    w32 = np.float32(w) if isinstance(w, _SCALARS) else np.asarray(w, np.float32)
    coeff = np.where(np.abs(w32) < 0.5, w32, np.float32(1) - w32).astype(np.float64)
    base = np.where(np.abs(w32) < 0.5, s32, e32).astype(np.float64)
    sign = np.where(np.abs(w32) < 0.5, 1.0, -1.0)
    r = (base + sign * coeff * d).astype(np.float32)  # one rounding (coeff * d is exact)
    if out is not None:
        out[...] = r
        return out
    return r.astype(s.dtype, copy=False)


class Lerp(Function):
    """y = s + w (e - s); ds = g conj(1 - w), de = g conj(w), dw = g conj(e - s) (the
    conjugates are torch's convention for complex inputs, no-ops on real ones)."""

    save_inputs = None

    def forward(self, s, e, w):
        self.s, self.e, self.w = s, e, w
        return as_dtype_of(_lerp_array(s, e, w), s, w)

    def backward(self, g):
        s, e, w = self.s, self.e, self.w
        cw = np.conjugate(w) if np.iscomplexobj(w) else w
        gs = ge = gw = None
        if self.needs_input_grad[0]:
            gs = unbroadcast(_same_dtype(g * (1.0 - cw), g), s.shape)
        if self.needs_input_grad[1]:
            ge = unbroadcast(_same_dtype(g * cw, g), e.shape)
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            d = e - s
            gw = unbroadcast(as_dtype_of(g * (np.conjugate(d) if np.iscomplexobj(d) else d), g, w),
                             w.shape)
        return gs, ge, gw

    def backward_graph(self, g):
        need = self.needs_input_grad
        w = _gg.conj(self.saved_input(2, self.w))
        gs = g * (1.0 - w) if need[0] else None
        ge = g * w if need[1] else None
        gw = None
        if len(need) > 2 and need[2]:
            gw = g * _gg.conj(self.saved_input(1, self.e) - self.saved_input(0, self.s))
        return gs, ge, gw


@register("lerp")
def lerp(input, end, weight):
    """``input + weight * (end - input)``; ``weight`` is a number or a Tensor."""
    s, e = promote(input, end)
    if isinstance(weight, Tensor):
        if weight.array.dtype != s.array.dtype:
            from .conversion import to_dtype

            weight = to_dtype(weight, s.dtype)
    return Lerp.apply(s, e, weight)


@register("lerp_")
def lerp_(input, end, weight):
    """In-place lerp; writes into ``input``'s array when no graph is recorded (EMA updates)."""
    if not needs_graph(input, end, weight) and isinstance(end, Tensor):
        a = input.array
        w = weight.array if isinstance(weight, Tensor) else weight
        _lerp_array(a, end.array, w, out=a)
        input._version_counter[0] += 1
        return input
    return inplace(input, lerp(input, end, weight))


# ---------------------------------------------------------------------------- addcmul/div
def _scaled_product(t1, t2, value, op=np.multiply):
    """(value * t1) op t2 in one fresh array (reused as ``out=`` when shapes agree)."""
    p = t1 * value if value != 1 else t1
    # (a 0-d t1 times a number is a NumPy scalar, which cannot take out=)
    if p is not t1 and type(p) is np.ndarray and p.shape == t2.shape and p.dtype == np.result_type(p, t2):
        return op(p, t2, out=p)
    return op(p, t2)


class Addcmul(Function):
    """y = x + v t1 t2; dx = g, dt1 = g v t2, dt2 = g v t1."""

    save_inputs = (1, 2)

    def forward(self, x, t1, t2, value=1):
        self.sx, self.t1, self.t2, self.value = x.shape, t1, t2, value
        return as_dtype_of(x + _scaled_product(t1, t2, value), x, t1)

    def backward(self, g):
        v = self.value
        gv = as_dtype_of(g * v, g) if v != 1 else g
        if np.iscomplexobj(gv):  # g * conj(d/dt): the other factor and value conjugated
            gv = g * np.conjugate(v)
            t1, t2 = np.conjugate(self.t1), np.conjugate(self.t2)
        else:
            t1, t2 = self.t1, self.t2
        gx = unbroadcast(g, self.sx) if self.needs_input_grad[0] else None
        g1 = unbroadcast(gv * t2, self.t1.shape) if self.needs_input_grad[1] else None
        g2 = unbroadcast(gv * t1, self.t2.shape) if self.needs_input_grad[2] else None
        return gx, g1, g2

    def backward_graph(self, g):
        need = self.needs_input_grad
        gv = g * _gg.conj(self.value) if self.value != 1 else g
        return (g if need[0] else None,
                gv * _gg.conj(self.saved_input(2, self.t2)) if need[1] else None,
                gv * _gg.conj(self.saved_input(1, self.t1)) if need[2] else None)


class Addcdiv(Function):
    """y = x + v t1 / t2; dx = g, dt1 = g v / t2, dt2 = -g v t1 / t2^2."""

    save_inputs = (1, 2)

    def forward(self, x, t1, t2, value=1):
        self.sx, self.t1, self.t2, self.value = x.shape, t1, t2, value
        return as_dtype_of(x + _scaled_product(t1, t2, value, np.divide), x, t1)

    def backward(self, g):
        v, t1, t2 = self.value, self.t1, self.t2
        if np.iscomplexobj(g):  # g * conj(d/dt): value and the factors conjugated
            v, t1, t2 = np.conjugate(v), np.conjugate(t1), np.conjugate(t2)
        gv = as_dtype_of(g * v, g) if v != 1 else g
        gx = unbroadcast(g, self.sx) if self.needs_input_grad[0] else None
        g1 = unbroadcast(gv / t2, t1.shape) if self.needs_input_grad[1] else None
        g2 = unbroadcast(-gv * t1 / (t2 * t2), t2.shape) if self.needs_input_grad[2] else None
        return gx, g1, g2

    def backward_graph(self, g):
        need = self.needs_input_grad
        gv = g * _gg.conj(self.value) if self.value != 1 else g
        t2 = _gg.conj(self.saved_input(2, self.t2))
        return (g if need[0] else None,
                gv / t2 if need[1] else None,
                -gv * _gg.conj(self.saved_input(1, self.t1)) / (t2 * t2) if need[2] else None)


def _promote3(x, t1, t2):
    x, t1, t2 = _tensor_arg(x), _tensor_arg(t1), _tensor_arg(t2)
    d = x.array.dtype
    if t1.array.dtype == d and t2.array.dtype == d:
        return x, t1, t2
    rd = result_type([(t.dtype, t.array.ndim) for t in (x, t1, t2)])
    from .conversion import to_dtype

    return to_dtype(x, rd), to_dtype(t1, rd), to_dtype(t2, rd)


@register("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    x, t1, t2 = _promote3(input, tensor1, tensor2)
    return Addcmul.apply(x, t1, t2, value=value)


@register("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    x, t1, t2 = _promote3(input, tensor1, tensor2)
    if not (_is_float_array(x.array) or x.array.dtype.kind == "c"):
        raise RuntimeError(
            f"addcdiv: integer division with addcdiv is not supported (got {x.dtype}); "
            "use floating point tensors"
        )
    return Addcdiv.apply(x, t1, t2, value=value)


def _fast_inplace_ok(input, tensor1, tensor2) -> bool:
    return (
        not needs_graph(input, tensor1, tensor2)
        and isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor)
        and _is_float_array(input.array)
    )


@register("addcmul_")
def addcmul_(input, tensor1, tensor2, *, value=1):
    """In-place ``input += value * tensor1 * tensor2`` (two NumPy passes when no graph)."""
    if _fast_inplace_ok(input, tensor1, tensor2):
        a = input.array
        np.add(a, _scaled_product(tensor1.array, tensor2.array, value), out=a)
        input._version_counter[0] += 1
        return input
    return inplace(input, addcmul(input, tensor1, tensor2, value=value))


@register("addcdiv_")
def addcdiv_(input, tensor1, tensor2, *, value=1):
    """In-place ``input += value * tensor1 / tensor2`` (two NumPy passes when no graph)."""
    if _fast_inplace_ok(input, tensor1, tensor2):
        a = input.array
        np.add(a, _scaled_product(tensor1.array, tensor2.array, value, np.divide), out=a)
        input._version_counter[0] += 1
        return input
    return inplace(input, addcdiv(input, tensor1, tensor2, value=value))
