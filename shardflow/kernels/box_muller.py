"""torch's float32 Box-Muller (``normal_fill_16_AVX2``) compiled: the same arithmetic as
``backend/avx_mathfun.py`` (avx_mathfun's Cephes ``log256_ps`` / ``sincos256_ps`` with the
compiler's fused multiply-adds) and ``backend/random_stream.py``'s ``_box_muller16``, in
three compiled passes instead of a few dozen NumPy passes with float64 temporaries. Compiled without fast-math (``exact``): every float32 operation rounds as
written; a fused multiply-add is the float64 product of two float32 numbers (exact) plus the
addend, rounded once to float32, as in ``avx_mathfun._fma``. The mantissa/exponent split of
``log256`` reads the exponent bits (through a uint32 view of a scratch buffer) and scales by
an exact power of two (the same ``m`` in [0.5, 1) as the bit manipulation), itself made as
float bits in a pass of its own (a table lookup there kept the log's loop from vectorising:
twice the time). ``tests/test_normal_draws_bitwise.py``
checks the bits against torch, with and without the kernels."""

from __future__ import annotations

import math

import numpy as np

from ._numba import kernel, prange

# avx_mathfun's constants (the same values as backend/avx_mathfun.py, which this layer may
# not import: tests/kernels/test_box_muller.py checks they agree)
_F32 = np.float32
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = (np.float64(_F32(c)) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_Q1, _Q2 = np.float64(_F32(-2.12194440e-4)), np.float64(_F32(0.693359375))
_SQRTHF = _F32(0.707106781186547524)
_MIN_NORM_F32 = np.array(0x00800000, np.uint32).view(_F32).item()
_FOPI = _F32(1.27323954473516)  # 4 / pi
_DP1, _DP2, _DP3 = (np.float64(_F32(c)) for c in (-0.78515625, -2.4187564849853515625e-4,
                                                   -3.77489497744594108e-8))
_S0, _S1, _S2 = (np.float64(_F32(c)) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
_C0, _C1, _C2 = (np.float64(_F32(c)) for c in (2.443315711809948e-005, -1.388731625493765e-003,
                                               4.166664568298827e-002))
_ONE, _HALF, _ZERO, _MTWO = _F32(1.0), _F32(0.5), _F32(0.0), _F32(-2.0)
_MIN_NORM_F32 = _F32(_MIN_NORM_F32)


# Four kernels, one loop each, called in turn: one function with the four loops gave NaN normals
# in its parallel build (numba's parfor passes cannot see that xf/xb and sf/sb are views of one
# buffer, and reordered the reads of the bits before their writes; every machine with more than
# two cores ran it). Separate kernels keep each pass a plain loop that vectorises.


@kernel(exact=True)
def _log_argument(u1, xf):
    """``xf`` = 1 - u1, denormals cut off to the smallest normal (log256 does)."""
    for i in prange(u1.size):
        x = _ONE - u1[i]
        xf[i] = x if x >= _MIN_NORM_F32 else _MIN_NORM_F32


@kernel(exact=True)
def _mantissa_scale(xb, sb):
    """``sb`` = the bits of 2 ** (126 - E), E the exponent field of ``xb``: 253 - E (E in 1..127)."""
    for i in prange(xb.size):
        sb[i] = (np.uint32(253) - (xb[i] >> np.uint32(23))) << np.uint32(23)


@kernel(exact=True)
def _radius(xb, xf, sf, radius):
    """``radius`` = sqrt(-2 log256(x)), x given as float (``xf``) and as bits (``xb``, the same
    buffer); the mantissa in [0.5, 1) is x * 2 ** (126 - E). Into a buffer of its own: written
    in place, LLVM's overlap check of the two views fails and the loop runs scalar (4x slower);
    a view made inside a kernel gave wrong numbers in numba's parallel build."""
    for i in prange(xb.size):
        big_e = np.int32(xb[i] >> np.uint32(23))
        x = xf[i] * sf[i]  # exact: a power of two (no table gather: the loop vectorises)
        e = _F32(big_e - np.int32(126))
        small = x < _SQRTHF
        tmp = x if small else _ZERO
        e = e - (_ONE if small else _ZERO)
        x = (x - _ONE) + tmp
        z = x * x
        y = _F32(_P0)
        y = _F32(np.float64(y) * np.float64(x) + _P1)
        y = _F32(np.float64(y) * np.float64(x) + _P2)
        y = _F32(np.float64(y) * np.float64(x) + _P3)
        y = _F32(np.float64(y) * np.float64(x) + _P4)
        y = _F32(np.float64(y) * np.float64(x) + _P5)
        y = _F32(np.float64(y) * np.float64(x) + _P6)
        y = _F32(np.float64(y) * np.float64(x) + _P7)
        y = _F32(np.float64(y) * np.float64(x) + _P8)
        y = y * x
        eq1 = _F32(np.float64(e) * _Q1)
        y = _F32(np.float64(y) * np.float64(z) + np.float64(eq1))
        y = y - z * _HALF
        x = x + y
        lg = _F32(np.float64(e) * _Q2 + np.float64(x))
        radius[i] = _F32(math.sqrt(np.float64(lg * _MTWO)))  # correctly rounded, as float32 sqrt


@kernel(exact=True)
def _sincos_times_radius(u2, two_pi, mean, std, affine, radius, out_c, out_s):
    """``out_c``/``out_s`` = radius * cos / sin of 2 pi u2 (sincos256; u2 >= 0: no sign to take
    off), then ``* std + mean`` as one fused multiply-add when ``affine``."""
    for i in prange(u2.size):
        x = u2[i] * two_pi
        j = np.int32(x * _FOPI)  # truncation
        j = (j + np.int32(1)) & np.int32(-2)
        yj = _F32(j)
        sign_sin = (j & np.int32(4)) != 0
        poly_sin = (j & np.int32(2)) == 0
        x = _F32(np.float64(yj) * _DP1 + np.float64(x))
        x = _F32(np.float64(yj) * _DP2 + np.float64(x))
        x = _F32(np.float64(yj) * _DP3 + np.float64(x))
        sign_cos = ((~(j - np.int32(2))) & np.int32(4)) != 0
        z = x * x
        yc = _F32(_C0)
        yc = _F32(np.float64(yc) * np.float64(z) + _C1)
        yc = _F32(np.float64(yc) * np.float64(z) + _C2)
        yc = yc * z
        yc = _F32(np.float64(yc) * np.float64(z) + np.float64(-(z * _HALF)))
        yc = yc + _ONE
        ys = _F32(_S0)
        ys = _F32(np.float64(ys) * np.float64(z) + _S1)
        ys = _F32(np.float64(ys) * np.float64(z) + _S2)
        ys = ys * z
        ys = _F32(np.float64(ys) * np.float64(x) + np.float64(x))
        sn = ys if poly_sin else yc
        cs = yc if poly_sin else ys
        sn = -sn if sign_sin else sn
        cs = -cs if sign_cos else cs
        a = radius[i] * cs
        b = radius[i] * sn
        if affine:  # fma(n, std, mean): one rounding, exact in float64
            a = _F32(np.float64(a) * std + mean)
            b = _F32(np.float64(b) * std + mean)
        out_c[i] = a
        out_s[i] = b


def normal16(d: np.ndarray, mean, std) -> np.ndarray:
    """torch's float32 normals of the uniforms ``d`` ((k, 16) float32), compiled."""
    k = d.shape[0]
    u1 = np.ascontiguousarray(d[:, :8], np.float32).reshape(-1)
    u2 = np.ascontiguousarray(d[:, 8:], np.float32).reshape(-1)
    xb = np.empty(8 * k, np.uint32)
    sb = np.empty(8 * k, np.uint32)
    out_c = np.empty(8 * k, np.float32)
    out_s = np.empty(8 * k, np.float32)
    affine = std != 1.0 or mean != 0.0
    xf = xb.view(np.float32)  # x as float32; its exponent bits read through xb
    radius = np.empty(8 * k, np.float32)
    _log_argument(u1, xf)
    _mantissa_scale(xb, sb)
    _radius(xb, xf, sb.view(np.float32), radius)
    _sincos_times_radius(u2, _F32(2.0 * np.pi), np.float64(np.float32(mean)),
                         np.float64(np.float32(std)), affine, radius, out_c, out_s)
    out = np.empty((k, 16), np.float32)
    out[:, :8] = out_c.reshape(k, 8)
    out[:, 8:] = out_s.reshape(k, 8)
    return out

