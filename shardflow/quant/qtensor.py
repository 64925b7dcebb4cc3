"""``QuantizedTensor``: integers plus (scale, zero point), PyTorch's quantized tensor.

PyTorch makes quantized tensors a dtype of ``torch.Tensor``; here they are a small separate
class, because no autograd op takes them: they flow only between the quantized modules
(``shardflow.ao.nn.quantized``) of a converted model and through ``dequantize``. The methods
keep PyTorch's names: ``int_repr``, ``q_scale``, ``q_zero_point``, ``q_per_channel_scales``,
``q_per_channel_zero_points``, ``q_per_channel_axis``, ``qscheme``, ``dequantize``.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor, _wrap
from .qparams import dequantize_array, quantize_array
from .qtypes import (
    QDtype,
    as_qdtype,
    per_channel_affine,
    per_tensor_affine,
    quint8,
)

__all__ = ["QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "dequantize"]


class QuantizedTensor:
    """``int_repr`` (NumPy integers of ``dtype``'s storage) with per-tensor ``scale`` /
    ``zero_point`` (Python numbers) or per-channel arrays along ``axis``."""

    is_quantized = True
    __slots__ = ("_q", "_scale", "_zero_point", "_axis", "dtype")

    def __init__(self, q: np.ndarray, scale, zero_point, dtype: QDtype = quint8,
                 axis: int | None = None):
        self._q, self.dtype, self._axis = q, as_qdtype(dtype), axis
        if axis is None:
            self._scale, self._zero_point = float(scale), int(zero_point)
        else:
            self._scale = np.asarray(scale, dtype=np.float32)
            self._zero_point = np.asarray(zero_point, dtype=np.int64)

    # PyTorch's accessors
    def int_repr(self) -> Tensor:
        return _wrap(self._q.copy())

    def q_scale(self) -> float:
        self._need_per_tensor("q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        self._need_per_tensor("q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self) -> Tensor:
        self._need_per_channel("q_per_channel_scales")
        return _wrap(self._scale.astype(np.float64))

    def q_per_channel_zero_points(self) -> Tensor:
        self._need_per_channel("q_per_channel_zero_points")
        return _wrap(self._zero_point.copy())

    def q_per_channel_axis(self) -> int:
        self._need_per_channel("q_per_channel_axis")
        return self._axis

    def qscheme(self):
        return per_tensor_affine if self._axis is None else per_channel_affine

    def dequantize(self) -> Tensor:
        return _wrap(dequantize_array(self._q, self._scale, self._zero_point, self._axis))

    @property
    def shape(self):
        return self._q.shape

    def size(self, dim: int | None = None):
        return self._q.shape if dim is None else self._q.shape[dim]

    def dim(self) -> int:
        return self._q.ndim

    ndim = property(dim)

    def numel(self) -> int:
        return int(self._q.size)

    # shape ops that keep per-tensor qparams (what models call between quantized modules)
    def _same_qparams(self, q):
        if self._axis is not None:
            raise RuntimeError("shape ops on per-channel QuantizedTensors are not supported")
        return QuantizedTensor(q, self._scale, self._zero_point, self.dtype)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        return self._same_qparams(self._q.reshape(shape))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        nd = self._q.ndim
        s, e = start_dim % nd if nd else 0, end_dim % nd if nd else 0
        shape = self._q.shape[:s] + (-1,) + self._q.shape[e + 1:] if nd else (1,)
        return self._same_qparams(self._q.reshape(shape))

    def contiguous(self, *args, **kwargs):
        return self

    def relu(self):
        """``max(q, zero_point)``: ReLU on the integers (0.0 is exactly the zero point)."""
        return self._same_qparams(np.maximum(self._q, np.asarray(self._zero_point, self._q.dtype)))

    def mean(self, dim=None, keepdim: bool = False, dtype=None):
        """torch's ``mean`` of a quantized tensor on its x86/fbgemm path for a quantized
        layer's output, which torch lays out channels-last: dequantized (``(q - zp) * s``),
        summed in float32 in torch's order, divided by the count,
        quantized again with the input's scale and zero point. For a 4-D tensor over dims
        (2, 3) (global average pooling, ``x.mean([2, 3])``) the sum is torch's outer-dim
        cascade sum over the H x W rows in memory order, so ties (a mean of integers is
        often exactly half a step) round as torch's; over other dims NumPy's float32 mean,
        which can differ from torch's by one integer at such a tie. (torch averages the
        integers instead, ``nearbyint(sum / n)``, for an NCHW-contiguous input, such as a
        QuantStub's output, reduced over its innermost dims; shardflow keeps no memory
        format and always takes the channels-last path.)"""
        self._need_per_tensor("mean")
        if dtype is not None:
            raise NotImplementedError("QuantizedTensor.mean(dtype=...) is not supported; dequantize() first")
        nd = self._q.ndim
        dims = tuple(range(nd)) if dim is None else tuple(
            sorted(d % nd for d in ((dim,) if isinstance(dim, int) else dim)))
        x = dequantize_array(self._q, self._scale, self._zero_point)
        if nd == 4 and dims == (2, 3):
            n, c, h, w = x.shape
            m = _cascade_outer_sum(x.transpose(0, 2, 3, 1).reshape(n, h * w, c)) / np.float32(h * w)
            m = m.reshape(n, c, 1, 1) if keepdim else m
        else:
            m = np.asarray(x.mean(axis=dims, keepdims=keepdim, dtype=np.float32), dtype=np.float32)
        d = self.dtype
        q = quantize_array(np.asarray(m, np.float32), self._scale, self._zero_point, d.qmin, d.qmax,
                           d.np_dtype, zero_point_first=True)  # torch's quantize_per_tensor of the mean
        return QuantizedTensor(q, self._scale, self._zero_point, d)

    def __len__(self) -> int:
        return len(self._q)

    def _need_per_tensor(self, what):
        if self._axis is not None:
            raise RuntimeError(
                f"{what}: this tensor is quantized per channel (axis {self._axis}); use "
                "q_per_channel_scales() / q_per_channel_zero_points()"
            )

    def _need_per_channel(self, what):
        if self._axis is None:
            raise RuntimeError(
                f"{what}: this tensor is quantized per tensor; use q_scale() / q_zero_point()"
            )

    def __repr__(self) -> str:
        if self._axis is None:
            qp = f"scale={self._scale:.6g}, zero_point={self._zero_point}"
        else:
            qp = f"axis={self._axis}, scales={self._scale.tolist()}"
        return f"QuantizedTensor(shape={tuple(self._q.shape)}, dtype={self.dtype}, {qp})"


def _multi_row_sum(x: np.ndarray) -> np.ndarray:
    """torch's CPU ``multi_row_sum`` over axis 1 of ``(N, R, C)`` float32: rows added in
    order into level 0; after each block of ``2 ** level_power`` rows the levels carry up
    (4 levels); the levels added at the end."""
    size = x.shape[1]
    level_power = max(4, (int(size - 1).bit_length() if size > 1 else 0) // 4)
    step, mask = 1 << level_power, (1 << level_power) - 1
    acc = [np.zeros((x.shape[0], x.shape[2]), np.float32) for _ in range(4)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] += x[:, i]
            i += 1
        for j in range(1, 4):
            acc[j] += acc[j - 1]
            acc[j - 1] = np.zeros_like(acc[j - 1])
            if i & (mask << (j * level_power)):
                break
    while i < size:
        acc[0] += x[:, i]
        i += 1
    for j in range(1, 4):
        acc[0] += acc[j]
    return acc[0]


def _row_sum(x: np.ndarray) -> np.ndarray:
    """torch's ``row_sum``: 4 interleaved partial sums (rows ``4 i + k``), each a
    ``multi_row_sum``, the leftover rows added to the first, then the four added in order."""
    size = x.shape[1]
    n4 = size // 4
    parts = [_multi_row_sum(x[:, k:4 * n4:4]) for k in range(4)]
    for i in range(4 * n4, size):
        parts[0] += x[:, i]
    total = parts[0]
    for k in range(1, 4):
        total = total + parts[k]
    return total


def _cascade_outer_sum(x: np.ndarray) -> np.ndarray:
    """Sum over axis 1 of ``(N, R, C)`` float32 (C contiguous) as torch's
    ``vectorized_outer_sum``: columns in blocks of 32 (4 rows of 8-float vectors: the width
    measured with torch 2.13 on an AVX512 machine) by ``multi_row_sum``, the remaining
    columns by ``row_sum``."""
    c = x.shape[2]
    cut = c // 32 * 32
    out = np.empty((x.shape[0], c), np.float32)
    if cut:
        out[:, :cut] = _multi_row_sum(x[:, :, :cut])
    if cut < c:
        out[:, cut:] = _row_sum(x[:, :, cut:])
    return out


def _array(x, what):
    if isinstance(x, Tensor):
        return x.array
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{what}: expected a float Tensor, got {type(x).__name__}")


def quantize_per_tensor(input, scale, zero_point, dtype) -> QuantizedTensor:
    """``torch.quantize_per_tensor``: ``clamp(zero_point + round(x / scale))`` in the full
    range of ``dtype`` (``quint8``, ``qint8``, ``qint32``)."""
    d = as_qdtype(dtype)
    x = _array(input, "quantize_per_tensor")
    scale = float(np.asarray(_array(scale, "scale") if isinstance(scale, Tensor) else scale))
    zero_point = int(np.asarray(zero_point.array if isinstance(zero_point, Tensor) else zero_point))
    if not scale > 0:
        raise ValueError(f"quantize_per_tensor: scale must be positive, got {scale}")
    q = quantize_array(x, scale, zero_point, d.qmin, d.qmax, d.np_dtype, zero_point_first=True)
    return QuantizedTensor(q, scale, zero_point, d)


def quantize_per_channel(input, scales, zero_points, axis: int, dtype) -> QuantizedTensor:
    """``torch.quantize_per_channel``: one (scale, zero point) per index of ``axis``."""
    d = as_qdtype(dtype)
    x = _array(input, "quantize_per_channel")
    s = np.asarray(scales.array if isinstance(scales, Tensor) else scales, dtype=np.float32)
    z = np.asarray(zero_points.array if isinstance(zero_points, Tensor) else zero_points)
    axis = axis % x.ndim
    if s.shape != (x.shape[axis],) or z.shape != s.shape:
        raise ValueError(
            f"quantize_per_channel: expected {x.shape[axis]} scales and zero points (size of "
            f"axis {axis} of shape {tuple(x.shape)}), got {s.shape} and {z.shape}"
        )
    q = quantize_array(x, s, z, d.qmin, d.qmax, d.np_dtype, axis=axis, zero_point_first=True)
    return QuantizedTensor(q, s, z, d, axis=axis)


def dequantize(input):
    """``torch.dequantize``: a float32 Tensor from a QuantizedTensor (a float Tensor is
    returned unchanged, as PyTorch does); lists are dequantized element by element."""
    if isinstance(input, QuantizedTensor):
        return input.dequantize()
    if isinstance(input, (list, tuple)):
        return type(input)(dequantize(t) for t in input)
    if isinstance(input, Tensor):
        return input
    raise TypeError(f"dequantize: expected a QuantizedTensor, got {type(input).__name__}")
