"""Scale / zero point from a value range, and the array-level (de)quantization kernels.

``calculate_qparams`` is PyTorch's ``ObserverBase._calculate_qparams`` in float32:
the range is widened to include 0 (so 0.0 is exact, which zero padding and ReLU need), then

* symmetric: ``scale = max(-min, max) / ((qmax - qmin) / 2)``, zero point 0 (128 for quint8);
* affine: ``scale = (max - min) / (qmax - qmin)``, ``zero_point = qmin - round(min / scale)``
  clamped to ``[qmin, qmax]``;

and ``scale >= eps`` (float32 machine epsilon). ``round`` is half-to-even (``torch.round``).

``choose_qparams_dynamic`` is FBGEMM's ``ChooseQuantizationParams`` (what PyTorch's dynamic
int8 Linear uses for each batch of activations): same scale, but the zero point is the one of
``qmin - min/scale`` and ``qmax - max/scale`` with the smaller rounding error.

``quantize_array`` follows FBGEMM/PyTorch: ``q = clamp(zero_point + nearbyint(x * (1/scale)),
qmin, qmax)`` with the reciprocal taken in float32 (a multiply, not a divide: that is what
makes results bit-identical to PyTorch's).
"""

from __future__ import annotations

import functools

import numpy as np

from ..backends.cpu import get_cpu_capability
from .qtypes import QDtype, quint8

__all__ = ["quant_range", "calculate_qparams", "choose_qparams_dynamic", "quantize_array",
           "dequantize_array", "EPS"]

EPS = np.float32(np.finfo(np.float32).eps)


def quant_range(dtype: QDtype, reduce_range: bool = False, quant_min=None, quant_max=None):
    """``(qmin, qmax)``: the dtype's range or the custom range if both ends are given; one bit
    less with ``reduce_range`` (PyTorch's observers: quint8 0..127, qint8 -64..63)."""
    if quant_min is not None and quant_max is not None:
        if not dtype.qmin <= quant_min < quant_max <= dtype.qmax:
            raise ValueError(
                f"quant_min/quant_max must satisfy {dtype.qmin} <= quant_min < quant_max <= "
                f"{dtype.qmax} for {dtype.name}, got {quant_min} and {quant_max}"
            )
        if reduce_range:  # PyTorch's calculate_qmin_qmax halves a custom range too
            return int(quant_min) // 2, int(quant_max) // 2
        return int(quant_min), int(quant_max)
    if reduce_range:
        return (dtype.qmin // 2, dtype.qmax // 2)
    return dtype.qmin, dtype.qmax


def calculate_qparams(min_val, max_val, qmin: int, qmax: int, symmetric: bool, dtype: QDtype,
                      customized_range: bool = False, eps=EPS):
    """Scale (float32) and zero point (int32) arrays for ``min_val``/``max_val`` (scalars or
    per-channel arrays); see the module docstring."""
    min_val = np.asarray(min_val, dtype=np.float32)
    max_val = np.asarray(max_val, dtype=np.float32)
    min_neg = np.minimum(min_val, np.float32(0))
    max_pos = np.maximum(max_val, np.float32(0))
    if symmetric:
        max_pos = np.maximum(-min_neg, max_pos)
        scale = max_pos / np.float32((qmax - qmin) / 2)
        scale = np.maximum(scale, eps).astype(np.float32)
        zp_value = ((qmin + qmax) // 2 if customized_range else 128) if dtype is quint8 else 0
        zero_point = np.full(scale.shape, zp_value, dtype=np.int32)
    else:
        scale = (max_pos - min_neg) / np.float32(qmax - qmin)
        scale = np.maximum(scale, eps).astype(np.float32)
        zero_point = qmin - np.round(min_neg / scale).astype(np.int32)
        zero_point = np.clip(zero_point, qmin, qmax).astype(np.int32)
    return scale, zero_point


def choose_qparams_dynamic(min_val: float, max_val: float, qmin: int, qmax: int,
                           preserve_sparsity: bool = False):
    """FBGEMM's ``ChooseQuantizationParams`` (no power-of-two scale): ``(scale, zero_point)``
    as a Python float (float32-rounded) and an int. The scale is computed in double, floored
    at 6.1e-5 (the range is stretched to match), and the zero point is nudged from the
    double-precision candidate with the smaller error. ``preserve_sparsity`` (symmetric
    schemes, used by ``FusedMovingAvgObsFakeQuantize``): a range straddling 0 is first made
    symmetric as ``[-(qmax-qmin)//2 - 1, (qmax-qmin)//2] * max_scale`` and the zero point is
    the middle of ``[qmin, qmax]``."""
    lo, hi = float(np.float32(min_val)), float(np.float32(max_val))
    straddles = lo < 0 < hi
    if straddles and preserve_sparsity:
        sym_min, sym_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        f = np.float32  # C++: float / int in float, then double * int stored as float
        max_scale = float(max(abs(f(lo) / f(sym_min)), abs(f(hi) / f(sym_max))))
        lo, hi = float(f(max_scale * sym_min)), float(f(max_scale * sym_max))
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / (qmax - qmin)
    if float(np.float32(scale)) == 0.0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    small = float(np.float32(6.1e-5))
    if scale < small:
        org, scale = scale, small
        if lo == 0.0:
            hi = small * (qmax - qmin)
        elif hi == 0.0:
            lo = -small * (qmax - qmin)
        else:
            amp = float(np.float32(small / org))
            lo, hi = float(np.float32(lo * amp)), float(np.float32(hi * amp))
    zp_from_min = qmin - lo / scale
    zp_from_max = qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if preserve_sparsity and lo < 0 < hi:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))  # nearbyint: half to even
    return float(np.float32(scale)), int(zp)


def _broadcast(param, ndim: int, axis: int | None):
    param = np.asarray(param)
    if axis is None or param.ndim == 0:
        return param
    shape = [1] * ndim
    shape[axis] = -1
    return param.reshape(shape)


def quantize_array(x: np.ndarray, scale, zero_point, qmin: int, qmax: int, np_dtype,
                   axis: int | None = None, zero_point_first: bool = False) -> np.ndarray:
    """Integers ``clamp(zero_point + nearbyint(x * (1/scale)), qmin, qmax)`` as ``np_dtype``;
    ``axis`` set: ``scale``/``zero_point`` are per-channel arrays along it.
    ``zero_point_first``: ``nearbyint(fma(x, 1/scale, zero_point))`` (FBGEMM's "legacy"
    ``Quantize``, what torch's ``quantize_per_tensor`` / ``quantize_per_channel`` of a float
    tensor run on x86: the zero point is added before rounding, in one float32 rounding, so
    a value half-way between two steps rounds to the even integer of the shifted sum; the
    fma is computed in float64 and rounded once to float32)."""
    inv = _broadcast(np.float32(1.0) / np.asarray(scale, dtype=np.float32), x.ndim, axis)
    zp = _broadcast(np.asarray(zero_point, dtype=np.float32), x.ndim, axis)
    if zero_point_first:
        q = np.rint((x.astype(np.float64) * inv.astype(np.float64) + zp.astype(np.float64)).astype(np.float32))
    else:
        q = np.rint(x.astype(np.float32, copy=False) * inv)
        q += zp
    np.clip(q, qmin, qmax, out=q)
    return q.astype(np_dtype)


def dequantize_array(q: np.ndarray, scale, zero_point, axis: int | None = None) -> np.ndarray:
    """Float32 ``(q - zero_point) * scale``."""
    s = _broadcast(np.asarray(scale, dtype=np.float32), q.ndim, axis)
    zp = _broadcast(np.asarray(zero_point, dtype=np.float32), q.ndim, axis)
    return ((q.astype(np.float32) - zp) * s).astype(np.float32, copy=False)


# torch's elementwise quantized kernels (quantized add, hardswish, ...) run a vectorized loop
# over blocks of one Vectorized<quint8> (64 values with AVX512, 32 with AVX2) and a scalar
# loop over the rest, and the two round differently: the vector loop dequantizes with
# fma(q, s, -zp * s) and quantizes as nearbyint(y * float(1 / scale)) + zp; the scalar loop
# dequantizes as (q - zp) * s and quantizes as nearbyint(float(zp + y * (1.0f / scale))),
# the zero point added first (FBGEMM's legacy rounding). Measured against torch 2.13:
# hardswish of 2,000 random tensors of 8 to 130 values, 0 integers apart.


@functools.cache
def quint8_vector_width() -> int:
    """Values in one of torch's ``Vectorized<quint8>`` on this CPU (64 with AVX512, else 32)."""
    return 64 if get_cpu_capability() == "AVX512" else 32


def scalar_tail(n: int) -> np.ndarray:
    """A flat boolean mask of the elements torch's scalar loop handles (the last ``n % width``)."""
    width = quint8_vector_width()
    return np.arange(n) >= n - n % width


def dequantize_elementwise(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """float32 values as torch's elementwise kernels dequantize ``q`` (see above)."""
    s = np.float32(scale)
    vec = (q.astype(np.float64) * np.float64(s) + np.float64(np.float32(np.float32(-zero_point) * s))).astype(np.float32)
    tail = scalar_tail(q.size).reshape(q.shape)
    if tail.any():
        vec[tail] = ((q[tail].astype(np.float32) - np.float32(zero_point)) * s).astype(np.float32)
    return vec


def quantize_elementwise(y: np.ndarray, scale: float, zero_point: int, qmin: int, qmax: int, np_dtype) -> np.ndarray:
    """Integers as torch's elementwise kernels quantize the float32 ``y`` (see above)."""
    y = np.asarray(y, np.float32)
    inv = np.float32(1.0 / np.float64(np.float32(scale)))
    q = np.rint(y * inv) + np.float32(zero_point)
    tail = scalar_tail(y.size).reshape(y.shape)
    if tail.any():
        inv_f = np.float32(1.0) / np.float32(scale)
        q[tail] = np.rint(np.float32(zero_point) + y[tail] * inv_f)
    return np.clip(q, qmin, qmax).astype(np_dtype)
