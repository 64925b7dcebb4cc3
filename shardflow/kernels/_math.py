"""Scalar math for the float32 kernels, vectorisable by LLVM (no libm calls).

Without Intel SVML numba calls libm once per element for ``exp`` / ``tanh`` / ``erf``, which
does not vectorise (measured: libm ``exp`` 9.3 ms over 2M float32 elements, NumPy's SIMD
``np.exp`` 7.7 ms, ``exp_neg`` below 2.3 ms). These replace them in float32 kernels:

* ``tanh32``, ``erf32``: Eigen's float rational approximations (clamped to [-7.905, 7.905] and
  [-4, 4], where the functions are +-1 in float32); max abs error 2.7e-7 and 3.3e-7.
* ``exp_neg(y)``, y <= 0 (softmax's ``x - max``, GELU's ``-x^2/2``): ``p(y/256)^256``, ``p``
  the degree-10 Taylor polynomial, in float64; max relative error 6e-8 over float32's normal
  range (half an ulp).

float64 kernels call libm (``exp_le0(y, exact=True)``).
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import helper


@helper
def tanh32(v):
    """float32 tanh, Eigen's rational approximation; exactly +-1 beyond +-7.905 (the
    rational's residue there, 1 - 2.6e-7, made tanh-GELU's ``x (1 - t^2)`` grow like x^3:
    derivative 28.9 instead of 1 at x = 1000). ``np.divide``, not ``/``: numba compiles a
    ZeroDivisionError check for ``/`` that keeps serial builds from vectorising (tanh-GELU
    over (2048, 1024): 10.8 ms serial with ``/``, 3.0 ms parallel)."""
    u = min(max(v, -7.90531110763549805), 7.90531110763549805)
    x2 = u * u
    p = x2 * -2.76076847742355e-16 + 2.00018790482477e-13
    p = x2 * p + -8.60467152213735e-11
    p = x2 * p + 5.12229709037114e-08
    p = x2 * p + 1.48572235717979e-05
    p = x2 * p + 6.37261928875436e-04
    p = x2 * p + 4.89352455891786e-03
    q = x2 * 1.19825839466702e-06 + 1.18534705686654e-04
    q = x2 * q + 2.26843463243900e-03
    q = x2 * q + 4.89352518554385e-03
    t = np.divide(u * p, q)
    if u == v:
        return t
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else v)  # v NaN: NaN


@helper
def erf32(v):
    """float32 erf, Eigen's rational approximation (clamped to +-4: erf is +-1 there)."""
    v = min(max(v, -4.0), 4.0)
    x2 = v * v
    p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08
    p = x2 * p + -2.10102402082508e-06
    p = x2 * p + -5.69250639462346e-05
    p = x2 * p + -7.34990630326855e-04
    p = x2 * p + -2.95459980854025e-03
    p = x2 * p + -1.60960333262415e-02
    q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04
    q = x2 * q + -1.68282697438203e-03
    q = x2 * q + -7.37332916720468e-03
    q = x2 * q + -1.42647390514189e-02
    # the approximation reaches 1 + 5e-8 at the clamp: without this min/max GELU's
    # 1 + erf was -5e-8 for large negative x (gelu(-1e6) = +0.02, gelu(-inf) = +inf)
    return min(max(v * p / q, -1.0), 1.0)


@helper
def exp_neg(y):
    """exp(y) for y <= 0 without libm: Taylor degree 10 at y/256, squared 8 times; exactly 0
    below -104 (under float32's smallest subnormal) and for -inf, NaN for NaN."""
    z = max(y, -104.0) * (1.0 / 256.0)
    p = 1.0 + z * (1.0 + z * (1.0 / 2 + z * (1.0 / 6 + z * (1.0 / 24 + z * (1.0 / 120 + z * (
        1.0 / 720 + z * (1.0 / 5040 + z * (1.0 / 40320 + z * (1.0 / 362880 + z / 3628800)))))))))
    for _ in range(8):
        p = p * p
    return p if y >= -104.0 else (0.0 if y < -104.0 else y)


@helper
def exp_le0(y, exact):
    """exp(y) for y <= 0: libm when ``exact`` (float64 arrays), else ``exp_neg``."""
    return math.exp(y) if exact else exp_neg(y)
