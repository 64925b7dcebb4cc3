"""torch's float32 Box-Muller (``normal_fill_16_AVX2``) compiled: the same arithmetic as
``backend/avx_mathfun.py`` (avx_mathfun's Cephes ``log256_ps`` / ``sincos256_ps`` with the
compiler's fused multiply-adds) and ``backend/random_stream.py``'s ``_box_muller16``, one
element at a time instead of a dozen NumPy passes with float64 temporaries (3-4x the time of
the uniform draws). Compiled without fast-math (``exact``): every float32 operation rounds as
written; a fused multiply-add is the float64 product of two float32 numbers (exact) plus the
addend, rounded once to float32, as in ``avx_mathfun._fma``. The mantissa/exponent split of
``log256`` reads the exponent bits (through a uint32 view of a scratch buffer) and scales by
an exact power of two (the same ``m`` in [0.5, 1) as the bit manipulation). ``tests/test_normal_draws_bitwise.py``
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


@kernel(exact=True)
def _normal16(d, two_pi, mean, std, affine, scratch_f, scratch_u, pow2, out):
    """``out`` (k, 16) float32 = torch's normals of the uniforms ``d`` (k, 16) float32."""
    for r in prange(d.shape[0]):
        for i in range(8):
            # radius = sqrt(-2 log256(1 - u1))
            x = _ONE - d[r, i]
            if x < _MIN_NORM_F32:
                x = _MIN_NORM_F32
            # the exponent from the bits (written through one buffer, read through its uint32
            # view), the mantissa in [0.5, 1) by an exact power-of-two scaling
            scratch_f[r, i] = x
            big_e = np.int32(scratch_u[r, i] >> np.uint32(23))
            e = _F32(big_e - np.int32(126))
            x = x * pow2[big_e]
            tmp = _ZERO
            if x < _SQRTHF:
                tmp = x
                e = e - _ONE
            x = x - _ONE
            x = x + tmp
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
            rad = lg * _MTWO
            rad = _F32(math.sqrt(np.float64(rad)))  # correctly rounded, as float32 sqrt
            # (sin, cos) = sincos256(2 pi u2)
            x = d[r, 8 + i] * two_pi  # >= 0 (u2 in [0, 1)): no sign to take off
            sign_sin = False
            j = np.int32(x * _FOPI)  # truncation
            j = (j + np.int32(1)) & np.int32(-2)
            yj = _F32(j)
            if (j & np.int32(4)) != 0:
                sign_sin = not sign_sin
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
            if poly_sin:
                s, c = ys, yc
            else:
                s, c = yc, ys
            if sign_sin:
                s = -s
            if sign_cos:
                c = -c
            a = rad * c
            b = rad * s
            if affine:  # fma(n, std, mean): one rounding, exact in float64
                a = _F32(np.float64(a) * std + mean)
                b = _F32(np.float64(b) * std + mean)
            out[r, i] = a
            out[r, 8 + i] = b


def normal16(d: np.ndarray, mean, std) -> np.ndarray:
    """torch's float32 normals of the uniforms ``d`` ((k, 16) float32), compiled."""
    out = np.empty(d.shape, np.float32)
    scratch = np.empty((d.shape[0], 8), np.float32)
    affine = std != 1.0 or mean != 0.0
    _normal16(np.ascontiguousarray(d, np.float32), _F32(2.0 * np.pi), np.float64(np.float32(mean)),
              np.float64(np.float32(std)), affine, scratch, scratch.view(np.uint32), _POW2, out)
    return out


# 2 ** (126 - E) for a float32 exponent field E (1..127 here: x in [2**-126, 1]); exact
_POW2 = np.array([2.0 ** (126 - e) if 1 <= e <= 127 else 0.0 for e in range(256)], np.float32)
