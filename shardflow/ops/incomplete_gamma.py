"""The regularised incomplete gamma functions: ``igamma(a, x) = P(a, x) =
gamma(a, x) / Gamma(a)`` (``torch.special.gammainc``) and ``igammac(a, x) = Q(a, x) =
1 - P(a, x)`` (``gammaincc``), with PyTorch's edge values (NaN for ``a < 0``, ``x < 0`` or
``a = x = 0``; ``P(0, x > 0) = 1``, ``P(a > 0, 0) = 0``, ``P(a, inf) = 1``). Gamma.cdf and
Chi2.cdf are built on them.

Algorithm (Numerical Recipes' gser/gcf, element-parallel in float64, every element iterated
until its own term is below ``1e-16`` relative, at most 5000 rounds): for ``x < a + 1``
the series ``P = e^{-x} x^a / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n))`` (the prefactor
through Stirling's series for ``a >= 10``, so large ``a`` keeps its precision); otherwise the
modified-Lentz continued fraction for ``Q``; the other one is ``1 - `` it (the direct one is
accurate where it is small).

Gradient: ``d/dx P = x^(a-1) e^{-x} / Gamma(a)`` (``-`` that for ``Q``); the derivative in
``a`` is not implemented in PyTorch either, and backward through it raises PyTorch's error.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import CPU, device_of, get_array_module, to_device
from ._util import inplace, promote, unbroadcast
from .special_functions import lgamma_array

__all__ = ["igamma", "igammac"]

_EPS = 1e-16
_FPMIN = 1e-300
_MAX_ROUNDS = 5000


def _log_prefactor(a, x):
    """``a log x - x - lgamma(a)``. For ``a >= 10`` through Stirling's series,
    ``a (log1p(t) - t) + log(a) / 2 - log(2 pi) / 2 - stirlerr(a)`` with ``x = a (1 + t)``,
    which avoids subtracting the large ``a log x`` and ``lgamma(a)``."""
    direct = a * np.log(x) - x - lgamma_array(a)
    big = a >= 10.0
    if not big.any():
        return direct
    ab, xb = a[big], x[big]
    t = (xb - ab) / ab
    inv = 1.0 / ab
    inv2 = inv * inv
    stirlerr = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680))))
    out = direct.copy()
    out[big] = ab * (np.log1p(t) - t) + 0.5 * np.log(ab) - 0.5 * np.log(2 * np.pi) - stirlerr
    return out


def _series_p(a, x):
    """P(a, x) by the power series (used where x < a + 1)."""
    ap = a.copy()
    term = 1.0 / a
    total = term.copy()
    active = np.ones(a.shape, dtype=bool)
    for _ in range(_MAX_ROUNDS):
        ap = ap + 1.0
        term = np.where(active, term * x / ap, term)
        total = np.where(active, total + term, total)
        active &= np.abs(term) >= np.abs(total) * _EPS
        if not active.any():
            break
    return total * np.exp(_log_prefactor(a, x))


def _fraction_q(a, x):
    """Q(a, x) by the continued fraction (used where x >= a + 1)."""
    b = x + 1.0 - a
    c = np.full(a.shape, 1.0 / _FPMIN)
    d = 1.0 / b
    h = d.copy()
    active = np.ones(a.shape, dtype=bool)
    for i in range(1, _MAX_ROUNDS + 1):
        an = -i * (i - a)
        b = b + 2.0
        d_new = an * d + b
        d_new = np.where(np.abs(d_new) < _FPMIN, _FPMIN, d_new)
        c_new = b + an / c
        c_new = np.where(np.abs(c_new) < _FPMIN, _FPMIN, c_new)
        d_new = 1.0 / d_new
        delta = d_new * c_new
        h = np.where(active, h * delta, h)
        d = np.where(active, d_new, d)
        c = np.where(active, c_new, c)
        active &= np.abs(delta - 1.0) >= _EPS
        if not active.any():
            break
    return np.exp(_log_prefactor(a, x)) * h


def _regularised(a, x, upper: bool):
    """P(a, x) (``upper=False``) or Q(a, x), float64 host arrays of one shape."""
    with np.errstate(all="ignore"):
        out = np.full(a.shape, np.nan)
        regular = (a > 0) & (x > 0) & np.isfinite(x)
        use_series = regular & (x < a + 1.0)
        use_fraction = regular & ~use_series
        if use_series.any():
            p = _series_p(a[use_series], x[use_series])
            out[use_series] = 1.0 - p if upper else p
        if use_fraction.any():
            q = _fraction_q(a[use_fraction], x[use_fraction])
            out[use_fraction] = q if upper else 1.0 - q
        lower_one = ((a == 0) & (x > 0)) | ((a > 0) & (x == np.inf))  # P = 1
        lower_zero = (a > 0) & (x == 0)  # P = 0
        out[lower_one] = 0.0 if upper else 1.0
        out[lower_zero] = 1.0 if upper else 0.0
    return out


def _host64(arr, shape):
    return np.broadcast_to(np.asarray(to_device(arr, CPU), dtype=np.float64), shape).copy()


class _IncompleteGamma(Function):
    save_inputs = (0, 1)

    def forward(self, a, x, upper=False):
        self.a, self.x, self.upper = a, x, upper
        shape = np.broadcast_shapes(np.shape(a), np.shape(x))
        out = _regularised(_host64(a, shape), _host64(x, shape), upper).astype(a.dtype)
        return out if isinstance(a, np.ndarray) else to_device(out, device_of(a))

    def backward(self, g):
        name = "igammac" if self.upper else "igamma"
        if self.needs_input_grad[0]:
            raise RuntimeError(f"the derivative for '{name}: input' is not implemented.")
        xp = get_array_module(g)
        a, x = self.a.astype(np.float64), self.x.astype(np.float64)
        with np.errstate(all="ignore"):
            density = xp.exp(-x + (a - 1.0) * xp.log(x) - lgamma_array(a))  # d P / d x
        gx = g * (-density if self.upper else density).astype(g.dtype)
        return None, unbroadcast(gx, np.shape(self.x))


def _operands(input, other, op):
    a, x = promote(input, other)
    if not isinstance(a, Tensor):
        a = Tensor(get_array_module(x.array).asarray(a, dtype=x.array.dtype))
    if not isinstance(x, Tensor):
        x = Tensor(get_array_module(a.array).asarray(x, dtype=a.array.dtype))
    if a.array.dtype.kind not in "fV":  # V: bfloat16 (ml_dtypes)
        name = str(a.dtype).split(".")[-1]
        aten = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{aten.get(name, name)}\'')
    return a, x


@register("igamma", "special_gammainc")
def igamma(input, other) -> Tensor:
    """``torch.igamma(a, x)`` / ``torch.special.gammainc``: the regularised lower incomplete
    gamma function ``P(a, x)``."""
    a, x = _operands(input, other, "igamma")
    return _IncompleteGamma.apply(a, x, upper=False)


@register("igammac", "special_gammaincc")
def igammac(input, other) -> Tensor:
    """``torch.igammac(a, x)`` / ``torch.special.gammaincc``: ``Q(a, x) = 1 - P(a, x)``."""
    a, x = _operands(input, other, "igammac")
    return _IncompleteGamma.apply(a, x, upper=True)


@register("igamma_")
def igamma_(input, other) -> Tensor:
    return inplace(input, igamma(input, other))


@register("igammac_")
def igammac_(input, other) -> Tensor:
    return inplace(input, igammac(input, other))

