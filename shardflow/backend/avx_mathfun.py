"""float32 ``log`` and ``sincos`` as PyTorch's CPU Box-Muller computes them, bit for bit.

torch's ``normal_`` / ``randn`` on a contiguous float32 tensor of >= 16 elements
(``normal_fill_16_AVX2`` in ATen) transforms its uniforms with ``log256_ps`` and
``sincos256_ps`` from avx_mathfun.h (Cephes polynomials, by J. Pommier and G. Garberoglio),
not with the C library: NumPy's float32 ``log``/``sin``/``cos`` are a different
approximation and 14% of the normals came out one float32 ulp from torch's. These are the
same algorithms on NumPy arrays, with the fused multiply-adds the compiler makes of
avx_mathfun's separate multiplies and adds (GCC contracts ``a * b + c`` on its vector types;
which pairs it fused was found by matching torch's ``randn``: 64000 of 64000 equal).

``_fma(a, b, c)`` is one rounding of ``a * b + c`` to float32: the product of two float32
numbers is exact in float64, so the float64 sum rounded to float32 is the fused result (up
to a double rounding at an exact float32 midpoint, about 2**-29 of the time).
"""

from __future__ import annotations

import numpy as np

_F32 = np.float32
_LOG_P = [_F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                            1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                            3.3333331174e-1)]
_LOG_Q1, _LOG_Q2 = np.float64(_F32(-2.12194440e-4)), np.float64(_F32(0.693359375))
_SQRTHF = _F32(0.707106781186547524)
_MIN_NORM_POS = np.array(0x00800000, np.uint32).view(_F32)
_INV_MANT_MASK = np.uint32(~0x7F800000 & 0xFFFFFFFF)
_HALF_BITS = np.array(0.5, _F32).view(np.uint32)
_FOPI = _F32(1.27323954473516)  # 4 / pi
_DP = [np.float64(_F32(c)) for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_SINCOF = [_F32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_COSCOF = [_F32(c) for c in (2.443315711809948e-005, -1.388731625493765e-003, 4.166664568298827e-002)]


def _fma(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (see the module docstring)."""
    return (np.multiply(a, b, dtype=np.float64) + c).astype(_F32)


def _poly(coefs, x) -> np.ndarray:
    """Horner's rule with a fused multiply-add per step: ``((c0 x + c1) x + c2) ...``."""
    y = np.full(x.shape, coefs[0], _F32)
    for c in coefs[1:]:
        y = _fma(y, x, np.float64(c))
    return y


def log256(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's ``log256_ps`` for positive float32 ``x`` (the Box-Muller's ``1 - u``)."""
    x = np.maximum(np.asarray(x, _F32), _MIN_NORM_POS)  # cut off denormals
    bits = x.view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 0x7F).astype(_F32)
    e += _F32(1)
    x = ((bits & _INV_MANT_MASK) | _HALF_BITS).view(_F32)  # the mantissa in [0.5, 1)
    small = x < _SQRTHF  # x < sqrt(1/2): e -= 1, x = x + x - 1; else x = x - 1
    tmp = np.where(small, x, _F32(0))
    x = x - _F32(1)
    e -= small.astype(_F32)
    x += tmp
    z = x * x
    y = _poly(_LOG_P, x) * x
    y = _fma(y, z, (e * np.float64(_LOG_Q1)).astype(_F32))  # y * z + e * q1
    y -= z * _F32(0.5)  # exact: z * 0.5 is a power-of-two scaling
    x += y
    return _fma(e, _LOG_Q2, x)  # x + e * q2


def sincos256(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's ``sincos256_ps`` for float32 ``x`` (the Box-Muller's ``2 pi u``):
    ``(sin x, cos x)``."""
    x = np.asarray(x, _F32)
    sign_sin = np.signbit(x)
    x = np.abs(x)
    j = (x * _FOPI).astype(np.int32)  # truncation, as _mm256_cvttps_epi32
    j = (j + 1) & ~1
    y = j.astype(_F32)
    sign_sin ^= (j & 4) != 0
    poly_sin = (j & 2) == 0  # the sine polynomial gives sin where this holds, cos elsewhere
    for dp in _DP:  # extended-precision reduction: x = ((x - y DP1) - y DP2) - y DP3
        x = _fma(y, dp, x)
    sign_cos = (~(j - 2) & 4) != 0
    z = x * x
    yc = _poly(_COSCOF, z) * z
    yc = _fma(yc, z, -(z * _F32(0.5)))  # yc z z - z / 2
    yc += _F32(1)
    ys = _poly(_SINCOF, z) * z
    ys = _fma(ys, x, x)  # x + ys z x
    s = np.where(poly_sin, ys, yc)
    c = np.where(poly_sin, yc, ys)
    np.negative(s, out=s, where=sign_sin)
    np.negative(c, out=c, where=sign_cos)
    return s, c
