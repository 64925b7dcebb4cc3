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
    q = quantize_array(x, scale, zero_point, d.qmin, d.qmax, d.np_dtype)
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
    q = quantize_array(x, s, z, d.qmin, d.qmax, d.np_dtype, axis=axis)
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
