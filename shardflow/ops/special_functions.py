"""Special functions of the gamma family and erfinv, with PyTorch's names: ``lgamma``,
``digamma``, ``polygamma``, ``mvlgamma``, ``erfinv`` (used by ``shardflow.distributions``:
Beta/Gamma/Dirichlet densities and entropies, Normal.icdf).

Every function is evaluated in float64 on the raw array (NumPy or CuPy) and cast back to the
input's floating dtype (integer inputs give the default float dtype, as in PyTorch).

Algorithms:

* ``lgamma``: Lanczos' approximation (g = 7, nine coefficients; relative error ~1e-15) for
  ``x >= 0.5``; the reflection ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)`` below,
  ``+inf`` at the poles (non-positive integers), exact zeros at 1 and 2. Gradient
  ``digamma(x)``.
* ``digamma``: PyTorch's ``calc_digamma`` (from Cephes): reflection for ``x < 0`` (with the
  fractional part inside ``tan``), the recurrence ``psi(x) = psi(x + 1) - 1/x`` until
  ``x >= 10``, then the asymptotic series. ``digamma(+-0) = -+inf``, negative integers NaN.
  Gradient ``polygamma(1, x)``.
* ``polygamma(n, x)``, ``n >= 1``: ``(-1)^(n+1) n! zeta(n + 1, x)`` with the Hurwitz zeta
  function summed as Cephes' ``zeta`` does (direct terms until ``q + i > 9`` and ``i >= 9``,
  then Euler-Maclaurin with twelve Bernoulli terms), all elements in lock step.
  Gradient ``polygamma(n + 1, x)``.
* ``mvlgamma(x, p) = p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)``, ``j < p``.
* ``xlogy(x, y) = x log(y)``, 0 where ``x == 0`` unless ``y`` is NaN (PyTorch's rule).
  Gradients (torch 2.13's): ``xlogy(g, y)`` (0 where ``x == 0`` and ``y <= 0``) and
  ``g x / y``.
* ``erfinv``: PyTorch's ``calc_erfinv`` (a rational first guess, then two Newton steps on
  ``erf``). Gradient ``sqrt(pi) / 2 exp(erfinv(x)^2)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import dtypes, get_array_module
from ._util import as_tensor_arg
from .elementwise import erf_array

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "xlogy"]

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_PSI_10 = 2.25175258906672110764
_PSI_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2,
                   7.57575757575757575758E-3, -4.16666666666666666667E-3,
                   3.96825396825396825397E-3, -8.33333333333333333333E-3,
                   8.33333333333333333333E-2)
# Cephes zeta: (2k)! / B_2k, k = 1..12
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _as_float_tensor(x) -> Tensor:
    t = as_tensor_arg(x)
    if t.array.dtype.kind not in "fV":
        t = Tensor(t.array.astype(dtypes.get_default_dtype().np))
    return t


def _f64(a):
    return a.astype(np.float64) if a.dtype != np.float64 else a


def _back(y, like):
    return y if y.dtype == like.dtype else y.astype(like.dtype)


# ----------------------------------------------------------------------- raw float64 kernels
def lgamma_array(x):
    """log|Gamma(x)| on a float64 array."""
    xp = get_array_module(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        reflect = x < 0.5
        z = xp.where(reflect, 1.0 - x, x) - 1.0  # Lanczos needs z + 1 >= 0.5
        a = xp.full_like(z, _LANCZOS[0])
        for i in range(1, len(_LANCZOS)):
            a = a + _LANCZOS[i] / (z + i)
        t = z + _LANCZOS_G + 0.5
        pos = _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(a)
        sin_pix = xp.abs(xp.sin(math.pi * (x - xp.floor(x))))  # sin(pi x) on [0, 1): exact zeros
        out = xp.where(reflect, math.log(math.pi) - xp.log(sin_pix) - pos, pos)
        pole = (x <= 0) & (x == xp.floor(x))
        out = xp.where(pole, np.inf, out)
        out = xp.where(xp.isinf(x), np.inf, out)
        out = xp.where((x == 1.0) | (x == 2.0), 0.0, out)  # exact zeros, as C's lgamma
    return out


def digamma_array(x):
    """psi(x) on a float64 array (PyTorch's calc_digamma, element-parallel)."""
    xp = get_array_module(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        neg = x < 0
        frac = x - xp.trunc(x)
        reflection = xp.where(neg, -math.pi / xp.tan(math.pi * frac), 0.0)
        v = xp.where(neg, 1.0 - x, x)
        result = xp.zeros_like(v)
        # v >= 0 here; at most ten steps bring every element to >= 10
        for _ in range(10):
            small = v < 10
            result = result - xp.where(small, 1.0 / xp.where(small, v, 1.0), 0.0)
            v = xp.where(small, v + 1.0, v)
        z = 1.0 / (v * v)
        poly = xp.zeros_like(v)
        for c in _PSI_ASYMPTOTIC:
            poly = poly * z + c
        y = xp.where(v < 1.0e17, z * poly, 0.0)
        asym = result + xp.log(v) - 0.5 / v - y
        out = xp.where(v == 10, result + _PSI_10, asym) + reflection
        out = xp.where(x == 0, xp.copysign(np.inf, -x), out)
        out = xp.where(neg & (x == xp.trunc(x)), np.nan, out)
    return out


def zeta_array(s: float, q):
    """Hurwitz zeta(s, q) for a Python float s > 1 and a float64 array q (Cephes' algorithm,
    element-parallel: the direct sum runs until every element has q + i > 9 and i >= 9)."""
    xp = get_array_module(q)
    machep = 1.11022302462515654042e-16
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s_sum = q ** -s
        a = q.copy()
        b = xp.zeros_like(q)
        done = xp.zeros(q.shape, dtype=bool)
        finished_sum = s_sum.copy()
        qmin = float(q.min()) if q.size else 0.0
        steps = max(9, int(math.ceil(9.0 - qmin)) + 1) if math.isfinite(qmin) else 9
        for _ in range(steps):
            a = a + 1.0
            b = a ** -s
            s_sum = s_sum + b
            converged = ~done & (-machep * s_sum < b) & (b < machep * s_sum)
            finished_sum = xp.where(converged, s_sum, finished_sum)
            done = done | converged
        w = a
        s_sum = s_sum + b * w / (s - 1.0) - 0.5 * b
        aa = xp.ones_like(q)
        k = 0.0
        tail_done = xp.zeros(q.shape, dtype=bool)
        for coef in _ZETA_A:
            aa = aa * (s + k)
            b = b / w
            t = aa * b / coef
            s_sum = xp.where(tail_done, s_sum, s_sum + t)
            tail_done = tail_done | (xp.abs(t / s_sum) < machep)
            k += 1.0
            aa = aa * (s + k)
            b = b / w
            k += 1.0
        out = xp.where(done, finished_sum, s_sum)
        out = xp.where((q <= 0) & (q == xp.floor(q)), np.inf, out)
    return out


def polygamma_array(n: int, x):
    """psi^(n)(x) on a float64 array."""
    if n == 0:
        return digamma_array(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.factorial(n) * zeta_array(float(n + 1), x)


_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (3.543889200, 1.637067800)


def erfinv_array(y):
    """erfinv on a float64 array (PyTorch's calc_erfinv)."""
    xp = get_array_module(y)
    a, b, c, d = _ERFINV_A, _ERFINV_B, _ERFINV_C, _ERFINV_D
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y_abs = xp.abs(y)
        z = y * y
        num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0]
        dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0
        central = y * num / dem
        zt = xp.sqrt(-xp.log((1.0 - xp.minimum(y_abs, 1.0)) / 2.0))
        num = ((c[3] * zt + c[2]) * zt + c[1]) * zt + c[0]
        dem = (d[1] * zt + d[0]) * zt + 1.0
        tail = xp.copysign(num, y) / dem
        x = xp.where(y_abs <= 0.7, central, tail)
        x = xp.where(xp.isfinite(x), x, 0.0)
        for _ in range(2):
            x = x - (erf_array(x) - y) / ((2.0 / math.sqrt(math.pi)) * xp.exp(-x * x))
        x = xp.where(y_abs == 1.0, xp.copysign(np.inf, y), x)
        x = xp.where(y_abs > 1.0, np.nan, x)
    return x


# ----------------------------------------------------------------------------- Functions
class Lgamma(Function):
    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        return _back(lgamma_array(_f64(x)), x)

    def backward(self, g):
        return _back(g * _back(digamma_array(_f64(self.x)), g), g)

    def backward_graph(self, g):
        return g * Polygamma.apply(self.saved_input(0), n=0)


class Polygamma(Function):
    """psi^(n)(x); n = 0 is digamma."""

    save_inputs = (0,)

    def forward(self, x, n=0):
        self.x, self.n = x, n
        return _back(polygamma_array(n, _f64(x)), x)

    def backward(self, g):
        return _back(g * _back(polygamma_array(self.n + 1, _f64(self.x)), g), g)

    def backward_graph(self, g):  # psi^(n)' = psi^(n+1): any order
        return g * Polygamma.apply(self.saved_input(0), n=self.n + 1)


class Erfinv(Function):
    save_inputs = ()
    save_output = True

    def forward(self, x):
        self.y = _back(erfinv_array(_f64(x)), x)
        return self.y

    def backward(self, g):
        xp = get_array_module(g)
        y = _f64(self.y)
        return _back(g * _back((0.5 * math.sqrt(math.pi)) * xp.exp(y * y), g), g)

    def backward_graph(self, g):
        y = self.saved_output(0, self.y)
        return g * ((y * y).exp() * (0.5 * math.sqrt(math.pi)))


@register("lgamma")
def lgamma(input) -> Tensor:
    """``torch.lgamma``: log of the absolute value of the gamma function."""
    return Lgamma.apply(_as_float_tensor(input))


@register("digamma", "special_digamma", "special_psi")
def digamma(input) -> Tensor:
    """``torch.digamma``: the logarithmic derivative of the gamma function."""
    return Polygamma.apply(_as_float_tensor(input), n=0)


@register("polygamma", "special_polygamma")
def polygamma(n: int, input) -> Tensor:
    """``torch.polygamma(n, input)``: the n-th derivative of digamma (``n >= 0``). The
    method form ``x.polygamma(n)`` reaches here as ``(x, n)``."""
    if isinstance(n, Tensor) and not isinstance(input, Tensor):
        n, input = input, n  # Tensor.polygamma(n)
    if isinstance(n, Tensor) or int(n) != n or n < 0:
        raise RuntimeError(
            f"polygamma(n, x) needs n to be a non-negative Python int, got n={n!r}"
        )
    return Polygamma.apply(_as_float_tensor(input), n=int(n))


@register("mvlgamma", "special_multigammaln")
def mvlgamma(input, p: int) -> Tensor:
    """``torch.mvlgamma(input, p)``: multivariate log-gamma; every element must exceed
    ``(p - 1) / 2`` (PyTorch's check)."""
    from .reduce import sum as _sum
    from .shape import unsqueeze

    t = _as_float_tensor(input)
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got p={p}")
    if t.array.size and float(t.array.min()) <= (p - 1) / 2:
        raise RuntimeError(
            f"All elements must be greater than (p-1)/2 = {(p - 1) / 2} for mvlgamma(input, "
            f"p={p}); got a minimum of {float(t.array.min())}"
        )
    xp = get_array_module(t.array)
    offsets = Tensor(xp.asarray(-np.arange(p, dtype=np.float64) / 2.0, dtype=t.array.dtype))
    terms = lgamma(unsqueeze(t, -1) + offsets)  # (..., p)
    return _sum(terms, -1) + p * (p - 1) / 4.0 * math.log(math.pi)


@register("erfinv", "special_erfinv")
def erfinv(input) -> Tensor:
    """``torch.erfinv``: the inverse error function on (-1, 1)."""
    return Erfinv.apply(_as_float_tensor(input))


@register("lgamma_")
def lgamma_(input) -> Tensor:
    from ._util import inplace

    return inplace(input, lgamma(input))


@register("digamma_")
def digamma_(input) -> Tensor:
    from ._util import inplace

    return inplace(input, digamma(input))


@register("erfinv_")
def erfinv_(input) -> Tensor:
    from ._util import inplace

    return inplace(input, erfinv(input))


@register("polygamma_")
def polygamma_(input, n: int) -> Tensor:
    """``x.polygamma_(n)``: ``x = polygamma(n, x)`` in place."""
    from ._util import inplace

    return inplace(input, polygamma(n, input))


@register("mvlgamma_")
def mvlgamma_(input, p: int) -> Tensor:
    """``x.mvlgamma_(p)``: ``x = mvlgamma(x, p)`` in place."""
    from ._util import inplace

    return inplace(input, mvlgamma(input, p))


class Xlogy(Function):
    save_inputs = (0, 1)

    def forward(self, x, y):
        xp = get_array_module(x if hasattr(x, "shape") else y)
        self.x, self.y = x, y
        with np.errstate(divide="ignore", invalid="ignore"):
            out = x * xp.log(y)
            out = xp.where((x == 0) & ~xp.isnan(y), 0.0, out)
        return out.astype(np.result_type(x, y), copy=False)

    def backward(self, g):
        from ._util import unbroadcast

        xp = get_array_module(g)
        x, y = self.x, self.y
        gx = gy = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                # torch's: xlogy(g, y), 0 where x == 0 and y <= 0 (log y is the derivative
                # in x at x == 0 too)
                gx = xp.where((g == 0) & ~xp.isnan(y), 0.0, g * xp.log(y))
                gx = xp.where((x == 0) & (y <= 0), 0.0, gx).astype(g.dtype, copy=False)
                gx = unbroadcast(gx, xp.shape(x))
            if self.needs_input_grad[1]:
                gy = unbroadcast((g * (x / y)).astype(g.dtype), xp.shape(y))
        return gx, gy

    def backward_graph(self, g):
        """``backward`` with Tensors: ``gx = xlogy(g, y)`` (this node again), the
        ``x == 0 and y <= 0`` mask a constant."""
        from . import _grad_graph as _gg

        x_t, y_t = self.saved_input(0, self.x), self.saved_input(1, self.y)
        gx = gy = None
        if self.needs_input_grad[0]:
            gx = _gg.keep_where(Xlogy.apply(g, y_t), ~((self.x == 0) & (self.y <= 0)))
            gx = _gg.sum_to(gx, self.x.shape)
        if self.needs_input_grad[1]:
            gy = _gg.sum_to(g * (x_t / y_t), self.y.shape)
        return gx, gy


@register("xlogy", "special_xlogy")
def xlogy(input, other) -> Tensor:
    """``torch.xlogy(input, other)``: ``input * log(other)``, 0 where ``input == 0``."""
    from ._util import promote
    from .conversion import to_dtype

    a, b = promote(input, other)
    if not isinstance(a, Tensor):  # a Python number takes the tensor's dtype
        a = Tensor(get_array_module(b.array).asarray(a, dtype=b.array.dtype))
    if not isinstance(b, Tensor):
        b = Tensor(get_array_module(a.array).asarray(b, dtype=a.array.dtype))
    if a.array.dtype.kind not in "fV":
        a, b = to_dtype(a, dtypes.get_default_dtype()), to_dtype(b, dtypes.get_default_dtype())
    return Xlogy.apply(a, b)
