"""Special functions and samplers from the distributions part of the torch-namespace gap list:
``i0`` (+ ``i0_``), ``igamma`` / ``igammac`` (+ in-place), ``Tensor.polygamma_`` /
``Tensor.mvlgamma_``, ``Tensor.cauchy_`` / ``geometric_`` / ``log_normal_``, ``poisson``,
``binomial``.

Kernels run in float64 (then cast back) with array functions CuPy also has:

* ``i0(x)`` (and ``torch.special``'s ``i1``, ``i0e``, ``i1e``): the power series ``sum_k (x^2 / 4)^k / (k!)^2`` (60 terms) for ``|x| <= 30``,
  the asymptotic series ``e^|x| / sqrt(2 pi |x|) sum_k a_k(0) / |x|^k`` (25 terms,
  relative error < 1e-19) beyond; order 1 the same way (odd in ``x``); the ``e`` forms scale
  by ``exp(-|x|)`` without overflow. Gradients: ``i0' = i1``, ``i1' = i0 - i1 / x``, the scaled
  forms less ``sign(x)`` times themselves.
* ``igamma(a, x)`` = P(a, x), the regularised lower incomplete gamma function, and
  ``igammac`` = Q = 1 - P: the series for ``x < a + 1`` and Lentz's continued fraction
  otherwise (Numerical Recipes' ``gser`` / ``gcf``, iterated until every element has
  converged), with PyTorch's special cases (NaN for negative arguments, ``a = 0``, ``x = 0``,
  infinities). Gradient in ``x``: ``+-exp(-x) x^(a-1) / Gamma(a)``; PyTorch has no gradient
  in ``a`` and neither does this (backward raises if ``a`` needs one).
* Samplers draw on the host from the tensor's generator (``shardflow.random``), as the other
  in-place random fills: ``cauchy_`` = ``median + sigma tan(pi (u - 1/2))``, ``geometric_``
  the number of Bernoulli(p) trials up to the first success (1, 2, ...), ``log_normal_``
  = ``exp(N(mean, std))``, ``poisson(rates)``, ``binomial(count, prob)``; the values follow
  PyTorch's distributions, not its random stream.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import CPU, get_array_module, to_device
from ..backend import random as _random
from ..backend.meta import is_meta_array
from ._util import inplace, promote, unbroadcast
from .creation import _fill_random
from .special_functions import _as_float_tensor, _back, _f64, lgamma_array, mvlgamma, polygamma

__all__ = ["i0", "i0_", "igamma", "igammac", "poisson", "binomial"]

_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 25
_SERIES_LIMIT = 30.0


# ---------------------------------------------------------------------------- i0 / i1
def _bessel_i(order: int, x, scaled: bool = False):
    """Modified Bessel function of the first kind, order 0 or 1, float64 (module docstring);
    ``scaled`` multiplies by ``exp(-|x|)`` (computed without overflow)."""
    xp = get_array_module(x)
    ax = xp.abs(x)
    small = ax <= _SERIES_LIMIT
    xs = xp.where(small, ax, 0.0)
    q = xs * xs / 4.0
    term = xp.ones_like(xs) if order == 0 else xs / 2.0
    total = term.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * q / (k * (k + order))
        total = total + term
    if scaled:
        total = total * xp.exp(-xs)
    xl = xp.where(small, 1.0, ax)
    mu = 4.0 * order * order
    term = xp.ones_like(xl)
    acc = term.copy()
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
        acc = acc + term
    large = acc / xp.sqrt(2.0 * math.pi * xl)
    if not scaled:
        with np.errstate(over="ignore", invalid="ignore"):
            large = xp.exp(xl) * large
    out = xp.where(small, total, large)
    if order == 1:
        out = xp.where(x < 0, -out, out)
    return xp.where(xp.isnan(x), xp.nan, out)


def _bessel_derivative(order: int, scaled: bool, x):
    """d/dx of i0 / i1 / i0e / i1e: i0' = i1, i1' = i0 - i1 / x (1/2 at 0); the scaled forms
    subtract ``sign(x)`` times themselves."""
    xp = get_array_module(x)
    if order == 0:
        d = _bessel_i(1, x, scaled)
    else:
        safe = xp.where(x == 0, 1.0, x)
        d = xp.where(x == 0, 0.5, _bessel_i(0, x, scaled) - _bessel_i(1, x, scaled) / safe)
    if scaled:
        d = d - xp.sign(x) * _bessel_i(order, x, True)
    return d


class BesselI(Function):
    save_inputs = (0,)

    def forward(self, x, order=0, scaled=False):
        self.x, self.order, self.scaled = x, order, scaled
        return _back(_bessel_i(order, _f64(x), scaled), x)

    def backward(self, g):
        return _back(g * _back(_bessel_derivative(self.order, self.scaled, _f64(self.x)), g), g)


@register("i0", "special_i0")
def i0(input) -> Tensor:
    """Modified Bessel function of the first kind of order 0."""
    return BesselI.apply(_as_float_tensor(input), order=0)


@register("i0_")
def i0_(input) -> Tensor:
    return inplace(input, i0(input))


@register("special_i1")
def special_i1(input) -> Tensor:
    """``torch.special.i1``: modified Bessel function of the first kind of order 1."""
    return BesselI.apply(_as_float_tensor(input), order=1)


@register("special_i0e")
def special_i0e(input) -> Tensor:
    """``torch.special.i0e``: ``exp(-|x|) i0(x)``."""
    return BesselI.apply(_as_float_tensor(input), order=0, scaled=True)


@register("special_i1e")
def special_i1e(input) -> Tensor:
    """``torch.special.i1e``: ``exp(-|x|) i1(x)``."""
    return BesselI.apply(_as_float_tensor(input), order=1, scaled=True)


# ---------------------------------------------------------------------------- igamma / igammac
_EPS = 1e-16
_TINY = 1e-300
_MAX_ITER = 5000


def _log_prefactor(a, x, xp):
    with np.errstate(divide="ignore", invalid="ignore"):
        return a * xp.log(x) - x - lgamma_array(a)


def _lower_series(a, x, xp):
    """P(a, x) by its series (converges for every x > 0; fast where x < a + 1)."""
    ap = a.copy()
    delta = 1.0 / a
    total = delta.copy()
    for _ in range(_MAX_ITER):
        ap = ap + 1.0
        delta = delta * x / ap
        total = total + delta
        if not bool(xp.any(xp.abs(delta) > xp.abs(total) * _EPS)):
            break
    return total * xp.exp(_log_prefactor(a, x, xp))


def _upper_fraction(a, x, xp):
    """Q(a, x) by Lentz's continued fraction (for x >= a + 1)."""
    b = x + 1.0 - a
    c = xp.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = xp.where(xp.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if not bool(xp.any(xp.abs(delta - 1.0) > _EPS)):
            break
    return xp.exp(_log_prefactor(a, x, xp)) * h


def _igamma_array(a, x, upper: bool):
    """P(a, x) (or Q with ``upper``) in float64, with PyTorch's special cases."""
    xp = get_array_module(a)
    a, x = xp.broadcast_arrays(a, x)
    regular = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    aa = xp.where(regular, a, 1.0)
    xx = xp.where(regular, x, 1.0)
    use_series = xx < aa + 1.0
    p_series = _lower_series(aa, xp.where(use_series, xx, 0.5 * aa), xp)
    q_frac = _upper_fraction(aa, xp.where(use_series, aa + 1.0, xx), xp)
    p = xp.where(use_series, p_series, 1.0 - q_frac)
    q = xp.where(use_series, 1.0 - p_series, q_frac)
    out = q if upper else p
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)  # the values at x = 0 and x = inf
    nan = xp.nan
    out = xp.where(regular, out, nan)
    out = xp.where((a == 0) & (x > 0), hi, out)
    out = xp.where((x == 0) & (a > 0), lo, out)
    out = xp.where(xp.isinf(a) & (a > 0) & xp.isfinite(x) & (x >= 0), lo, out)
    out = xp.where(xp.isinf(x) & (x > 0) & xp.isfinite(a) & (a >= 0), hi, out)
    out = xp.where((a < 0) | (x < 0) | xp.isnan(a) | xp.isnan(x), nan, out)
    return out


class Igamma(Function):
    save_inputs = (0, 1)

    def forward(self, a, x, upper=False):
        self.a, self.x, self.upper = a, x, upper
        return _igamma_array(_f64(a), _f64(x), upper).astype(np.result_type(a, x), copy=False)

    def backward(self, g):
        xp = get_array_module(g)
        name = "igammac" if self.upper else "igamma"
        if self.needs_input_grad[0]:
            raise RuntimeError(f"the derivative for '{name}' with respect to input (a) is not implemented "
                               f"(as in PyTorch); detach a or use it without requires_grad")
        a, x = _f64(self.a), _f64(self.x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dens = xp.exp(-x + (a - 1.0) * xp.log(x) - lgamma_array(a))
        dens = -dens if self.upper else dens
        return None, unbroadcast((g * dens.astype(g.dtype)).astype(g.dtype), xp.shape(self.x))


def _igamma(input, other, upper):
    a, x = promote(input, other)
    if not isinstance(a, Tensor):
        a = Tensor(get_array_module(x.array).asarray(a, dtype=x.array.dtype))
    if not isinstance(x, Tensor):
        x = Tensor(get_array_module(a.array).asarray(x, dtype=a.array.dtype))
    a, x = _as_float_tensor(a), _as_float_tensor(x)
    return Igamma.apply(a, x, upper=upper)


@register("igamma", "special_gammainc")
def igamma(input, other) -> Tensor:
    """Regularised lower incomplete gamma function P(input, other)."""
    return _igamma(input, other, False)


@register("igammac", "special_gammaincc")
def igammac(input, other) -> Tensor:
    """Regularised upper incomplete gamma function Q(input, other) = 1 - P."""
    return _igamma(input, other, True)


@register("igamma_")
def igamma_(input, other) -> Tensor:
    return inplace(input, igamma(input, other))


@register("igammac_")
def igammac_(input, other) -> Tensor:
    return inplace(input, igammac(input, other))


# ---------------------------------------------------------------------------- in-place methods
@register("polygamma_")
def polygamma_(self, n: int) -> Tensor:
    """``x.polygamma_(n)``: ``x = polygamma(n, x)``."""
    return inplace(self, polygamma(n, self))


@register("mvlgamma_")
def mvlgamma_(self, p: int) -> Tensor:
    """``x.mvlgamma_(p)``: ``x = mvlgamma(x, p)``."""
    return inplace(self, mvlgamma(self, p))


# ---------------------------------------------------------------------------- samplers
@register("cauchy_")
def cauchy_(t: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with Cauchy(median, sigma) draws."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if is_meta_array(t.array):
        return t
    u = _random.rng(generator).random(t.array.shape)
    return _fill_random(t, median + sigma * np.tan(np.pi * (u - 0.5)))


@register("geometric_")
def geometric_(t: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, _random.rng(generator).geometric(p, t.array.shape).astype(np.float64))


@register("log_normal_")
def log_normal_(t: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with ``exp(N(mean, std))`` draws."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, np.exp(_random.rng(generator).normal(mean, std, t.array.shape)))


def _host(t: Tensor):
    return np.asarray(to_device(t.array, CPU), dtype=np.float64)


@register("poisson")
def poisson(input, generator=None) -> Tensor:
    """Poisson draws with the rates ``input`` (same shape and dtype)."""
    rates = _host(input)
    if rates.size and not bool((rates >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = _random.rng(generator).poisson(rates).astype(input.array.dtype)
    return _wrap(to_device(draws, input.device))


@register("binomial")
def binomial(count, prob, generator=None) -> Tensor:
    """Binomial(count, prob) draws (``prob`` clipped to [0, 1]); ``count``'s dtype."""
    n = _host(count)
    p = np.clip(_host(prob), 0.0, 1.0)
    if n.size and not bool((n >= 0).all()):
        raise RuntimeError("binomial: expected count to be non-negative")
    draws = _random.rng(generator).binomial(n.astype(np.int64), p).astype(count.array.dtype)
    return _wrap(to_device(draws, count.device))
