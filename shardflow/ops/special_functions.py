"""Special functions in NumPy alone: ``lgamma``, ``digamma``, ``trigamma`` (digamma's
derivative), ``erfinv``; the arrays-in, arrays-out kernels the ops in ``math_extra.py`` use.

* ``lgamma``: Lanczos' approximation (g = 7, 9 coefficients, Numerical Recipes / Press et
  al.) for ``x >= 0.5``, ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below (reflection);
  ``+inf`` at the poles ``x = 0, -1, -2, ...``. Relative error about 1e-15.
* ``digamma``: ``psi(x) = psi(x + k) - sum_{j<k} 1 / (x + j)`` shifts ``x`` to at least 6,
  then the asymptotic series ``log x - 1/(2x) - sum B_2n / (2n x^2n)``; reflection
  ``psi(1 - x) - pi / tan(pi x)`` for ``x < 0``; at the poles PyTorch's answer (``-inf``
  at 0, ``nan`` at negative integers).
* ``trigamma``: the same shift and the series ``1/x + 1/(2x^2) + sum B_2n / x^(2n+1)``;
  reflection ``pi^2 / sin^2(pi x) - trigamma(1 - x)``.
* ``erfinv``: Giles' single-precision rational approximation ("Approximating the erfinv
  function", 2010) as the start, then Newton steps with the double-precision
  ``erf``/``erfc`` of ``elementwise.py`` (four steps): on ``erf(x) = |y|`` for
  ``|y| <= 0.5``, on ``log erfc(x) = log(1 - |y|)`` beyond (``1 - |y|`` is exact there, ``erf``
  too close to 1 to resolve the tail, and the log makes Newton converge from Giles' start,
  which is only single-precision accurate); ``+-inf`` at ``+-1``, ``nan`` outside ``[-1, 1]``.

Everything is computed in float64 and cast back to the input's dtype by the caller.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["lgamma_array", "digamma_array", "trigamma_array", "erfinv_array"]

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Bernoulli numbers B_2n / (2n) for the digamma series, B_2n for trigamma's
_B2N = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0)


def _lgamma_pos(x):
    """lgamma for x >= 0.5 (Lanczos)."""
    z = x - 1.0
    a = np.full_like(z, _LANCZOS[0])
    for i in range(1, 9):
        a += _LANCZOS[i] / (z + i)
    t = z + _LANCZOS_G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(a)


def lgamma_array(x):
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    hi = x >= 0.5
    out[hi] = _lgamma_pos(x[hi])
    lo = ~hi
    if lo.any():
        xl = x[lo]
        s = np.abs(np.sin(math.pi * xl))
        with np.errstate(divide="ignore"):
            r = np.log(math.pi / s) - _lgamma_pos(1.0 - xl)
        r[(xl == np.floor(xl)) | (s == 0)] = np.inf  # poles
        out[lo] = r
    out[np.isnan(x)] = np.nan
    out[np.isinf(x)] = np.inf
    return out


def _shift_up(x, f, acc):
    """Move every element of ``x`` to at least 6 with the recurrence term ``f(x)`` added to ``acc``."""
    x = x.copy()
    for _ in range(6):
        small = x < 6.0
        if not small.any():
            break
        acc[small] += f(x[small])
        x[small] += 1.0
    return x


def digamma_array(x):
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    neg = x < 0
    xp = np.where(neg, 1.0 - x, x)  # reflection argument for negatives
    acc = np.zeros_like(xp)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = _shift_up(xp, lambda v: -1.0 / v, acc)
        inv2 = 1.0 / (y * y)
        series = np.zeros_like(y)
        p = inv2.copy()
        for n, b in enumerate(_B2N, start=1):
            series += b / (2 * n) * p
            p *= inv2
        res = np.log(y) - 0.5 / y - series + acc
        refl = res - math.pi / np.tan(math.pi * x)
    out[:] = np.where(neg, refl, res)
    out[x == 0] = -np.inf
    out[neg & (x == np.floor(x))] = np.nan
    out[np.isposinf(x)] = np.inf
    out[np.isnan(x) | np.isneginf(x)] = np.nan
    return out


def trigamma_array(x):
    x = np.asarray(x, np.float64)
    neg = x < 0.5
    xp = np.where(neg, 1.0 - x, x)
    acc = np.zeros_like(xp)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = _shift_up(xp, lambda v: 1.0 / (v * v), acc)
        inv = 1.0 / y
        inv2 = inv * inv
        series = np.zeros_like(y)
        p = inv2 * inv
        for b in _B2N:
            series += b * p
            p *= inv2
        res = inv + 0.5 * inv2 + series + acc
        s = np.sin(math.pi * x)
        refl = (math.pi * math.pi) / (s * s) - res
    out = np.where(neg, refl, res)
    out[(x <= 0) & (x == np.floor(x))] = np.inf
    return out


# Giles (2010), single precision: w = -log((1 - x)(1 + x)), two polynomial branches
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, w):
    p = np.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = p * w + c
    return p


def erfinv_array(y):
    from .elementwise import erf_array, erfc_array  # double-precision erf/erfc (Cody)

    y = np.asarray(y, np.float64)
    ay = np.abs(y)
    q = 1.0 - ay  # exact for |y| >= 0.5 (Sterbenz), where the tail needs it
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log(q * (1.0 + ay))
        x = np.where(w < 5.0, _horner(_GILES_LO, w - 2.5), _horner(_GILES_HI, np.sqrt(w) - 3.0)) * ay
        far = q < 1e-6  # beyond Giles' single-precision range: the asymptotic erfc(x) ~ exp(-x^2)/(x sqrt(pi))
        lq = -np.log(np.where(far, q, 0.5))
        x = np.where(far, np.sqrt(lq - 0.5 * np.log(lq) - 0.5 * math.log(math.pi)), x)
        tail = ay > 0.5  # there Newton on log(erfc(x)) = log(q): erf(x) is too close to 1
        log_q = np.log(q)
        for _ in range(4):
            dens = 2.0 / math.sqrt(math.pi) * np.exp(-x * x)
            c = erfc_array(x)
            step = np.where(tail, (log_q - np.log(c)) * c / dens, (erf_array(x) - ay) / dens)
            x = x - np.where(np.isfinite(step), step, 0.0)
    x = np.copysign(x, y)
    x = np.where(ay == 1.0, np.copysign(np.inf, y), x)
    x[(ay > 1) | np.isnan(y)] = np.nan
    return x
