"""Static quantized modules (``torch.ao.nn.quantized``): uint8 activations in, uint8 out.

Each layer takes a ``QuantizedTensor`` (quint8, scale ``sx``, zero point ``zx``), holds qint8
weights (per tensor or per output channel) and a float bias, and has the output ``scale`` /
``zero_point`` that calibration measured::

    acc = sum_k (x_q - zx) * (w_q - zw)                  # int32, exact (int8_gemm)
    y   = acc * (sx * sw) + bias                         # float32
    out = clamp(round(y / s_out) + z_out, 0, 255)        # quint8

``Linear`` runs ``int8_matmul``; ``Conv2d`` runs the float32 im2col convolution on the
integer differences, split over input channels so that each partial sum stays exact (below
2^24), and sums the parts in int32. ``ReLU``, ``MaxPool2d``, ``Flatten``, ``Dropout`` and
``Identity`` commute with the affine map (they preserve order and 0), so they run their float
module on ``x_q - zx`` and keep the input's scale and zero point (PyTorch runs these float
modules on quantized tensors directly; ``convert`` swaps them for these wrappers).
``Quantize`` / ``DeQuantize`` turn float Tensors into QuantizedTensors and back.
"""

from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.tensor import Tensor, _wrap
from ...nn import functional as F
from ...nn.module import Module
from ..int8_gemm import _bound, exact_chunk, int8_matmul
from ..qparams import dequantize_elementwise, quantize_array, quantize_elementwise
from ..qtensor import QuantizedTensor
from ..qtypes import as_qdtype, per_channel_affine, per_tensor_affine, quint8
from .intrinsic import FusedModule
from .packed import PackedParams, quantize_weight, repr_hiding_packed_params

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv2d", "LinearReLU", "ConvReLU2d", "ReLU",
           "MaxPool2d", "Flatten", "Dropout", "Identity", "AdaptiveAvgPool2d", "ReLU6", "Hardswish"]


def _pair(v):
    return tuple(v) if isinstance(v, tuple | list) else (v, v)


def _need_q(x, who):
    if not isinstance(x, QuantizedTensor):
        raise TypeError(
            f"quantized {who} expects a QuantizedTensor, got {type(x).__name__}; put a QuantStub "
            "(or QuantWrapper) before the first quantized layer and a DeQuantStub after the last"
        )
    if x._axis is not None:
        raise TypeError(f"quantized {who} expects a per-tensor quantized input, got per-channel")


def _output_qparams(mod):
    obs = getattr(mod, "activation_post_process", None)
    if obs is None:
        raise ValueError(
            f"convert: {type(mod).__name__} has no activation_post_process (output observer); "
            "run prepare() and calibration batches before convert()"
        )
    s, z = obs.calculate_qparams()
    return float(s.array.reshape(-1)[0]), int(z.array.reshape(-1)[0])


def _weight_observer(mod):
    """A QAT module's trained ``weight_fake_quant``, else a fresh ``qconfig.weight()``."""
    wfq = getattr(mod, "weight_fake_quant", None)
    if wfq is not None:
        return wfq
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise ValueError(
            f"convert: {type(mod).__name__} has no qconfig; set model.qconfig before prepare()"
        )
    return qconfig.weight()


class Quantize(Module):
    """Float Tensor -> QuantizedTensor with a fixed scale / zero point (QuantStub converted)."""

    def __init__(self, scale: float, zero_point: int, dtype=quint8):
        super().__init__()
        self.register_buffer("scale", _wrap(np.array([scale], np.float32)))
        self.register_buffer("zero_point", _wrap(np.array([zero_point], np.int64)))
        self.dtype = as_qdtype(dtype)

    def forward(self, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"Quantize expects a float Tensor, got {type(x).__name__}")
        s, z = float(self.scale.array[0]), int(self.zero_point.array[0])
        d = self.dtype
        # torch's quantize_per_tensor (FBGEMM's legacy rounding: zero point added first)
        return QuantizedTensor(quantize_array(x.array, s, z, d.qmin, d.qmax, d.np_dtype, zero_point_first=True), s, z, d)

    @classmethod
    def from_float(cls, mod):
        s, z = _output_qparams(mod)
        return cls(s, z, mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"  # torch's: buffers as tensors


class DeQuantize(Module):
    def forward(self, x):
        return x.dequantize() if isinstance(x, QuantizedTensor) else x

    @classmethod
    def from_float(cls, mod):
        return cls()


class _WeightedQuantized(Module):
    """Output qparams buffers + packed int8 weights; ``_requantize`` of the int32 result
    (``_relu``: the fused forms clamp the float result at 0 first, which equals PyTorch's
    clamp of the integers at the zero point, since 0.0 quantizes to it exactly)."""

    _relu = False

    def _init_out(self, scale=1.0, zero_point=0):
        self.register_buffer("scale", _wrap(np.array([scale], np.float32)))
        self.register_buffer("zero_point", _wrap(np.array([zero_point], np.int64)))

    def weight(self):
        return self._packed_params.qweight()

    def bias(self):
        b = self._packed_params.bias_array()
        return None if b is None else _wrap(b.copy())

    def _requantize(self, acc, x, bshape):
        p = self._packed_params
        y = acc.astype(np.float32)
        y *= (np.float32(x._scale) * p.w_scale()).astype(np.float32).reshape(bshape)
        b = p.bias_array()
        if b is not None:
            y += b.reshape(bshape)
        if self._relu:
            np.maximum(y, 0, out=y)
        s, z = float(self.scale.array[0]), int(self.zero_point.array[0])
        return QuantizedTensor(quantize_array(y, s, z, 0, 255, np.uint8), s, z, quint8)


class Linear(_WeightedQuantized):
    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype="qint8",
                 per_channel: bool = False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self._packed_params = PackedParams((out_features, in_features), per_channel, bias_)
        self._init_out()

    def forward(self, x):
        _need_q(x, "Linear")
        q = x._q
        if q.shape[-1] != self.in_features:
            raise RuntimeError(
                f"quantized Linear: input has {q.shape[-1]} features (shape {tuple(q.shape)}), "
                f"expected {self.in_features}"
            )
        p = self._packed_params
        acc = int8_matmul(q.reshape(-1, self.in_features), x._zero_point, p.weight.array, p.w_zp())
        out = self._requantize(acc, x, (1, -1))  # acc: (M, N)
        out._q = out._q.reshape(q.shape[:-1] + (self.out_features,))
        return out

    @classmethod
    def from_float(cls, mod):
        layer = mod[0] if isinstance(mod, FusedModule) else mod  # (Linear, ReLU) fused
        q, scale, zp, per_channel = quantize_weight(layer.weight.array, _weight_observer(mod))
        new = cls(layer.in_features, layer.out_features, layer.bias is not None, per_channel=per_channel)
        new._packed_params.set(q, scale, zp, None if layer.bias is None else layer.bias.array)
        new._init_out(*_output_qparams(mod))
        return new

    def extra_repr(self) -> str:
        # torch's: the output scale as a Python float, the weight's scheme
        scheme = per_channel_affine if self._packed_params.per_channel else per_tensor_affine
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={float(self.scale.array[0])}, zero_point={int(self.zero_point.array[0])}, qscheme={scheme}")

    def _get_name(self) -> str:
        return "QuantizedLinear"

    __repr__ = repr_hiding_packed_params  # one line, the packed weights hidden, as torch's


class Conv2d(_WeightedQuantized):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 per_channel: bool = False):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"quantized Conv2d supports padding_mode='zeros' only, got {padding_mode!r}")
        k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self._packed_params = PackedParams((out_channels, in_channels // groups) + k, per_channel, bias)
        self._init_out()

    def forward(self, x):
        _need_q(x, "Conv2d")
        p = self._packed_params
        xf = x._q.astype(np.float32)
        xf -= np.float32(x._zero_point)  # zero padding of x - zx = padding with the zero point
        wz = p.zero_point.array.astype(np.float32)
        wf = p.weight.array.astype(np.float32) - (wz.reshape(-1, 1, 1, 1) if p.per_channel else wz[0])
        kk = self.kernel_size[0] * self.kernel_size[1]
        per = max(1, exact_chunk(_bound(True, x._zero_point), _bound(False, p.zero_point.array)) // kk)
        cg = wf.shape[1]
        if cg > per and self.groups != 1:
            raise NotImplementedError(
                f"quantized Conv2d: {cg} input channels per group x {kk} kernel positions is too "
                "long a sum for exact float32 accumulation with groups > 1"
            )
        acc = None
        with no_grad():
            for c in range(0, cg, per):
                part = F.conv2d(_wrap(np.ascontiguousarray(xf[:, c:c + per])),
                                _wrap(np.ascontiguousarray(wf[:, c:c + per])), None, self.stride,
                                self.padding, self.dilation, self.groups).array.astype(np.int32)
                acc = part if acc is None else acc + part  # (N, O, H', W') int32
        return self._requantize(acc, x, (1, -1, 1, 1))

    @classmethod
    def from_float(cls, mod):
        c = mod[0] if isinstance(mod, FusedModule) else mod  # (Conv2d, ReLU) fused
        q, scale, zp, per_channel = quantize_weight(c.weight.array, _weight_observer(mod))
        if isinstance(c.padding, str):
            raise NotImplementedError(f"quantized Conv2d takes numeric padding, got {c.padding!r}")
        new = cls(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding,
                  c.dilation, c.groups, c.bias is not None, c.padding_mode, per_channel)
        new._packed_params.set(q, scale, zp, None if c.bias is None else c.bias.array)
        new._init_out(*_output_qparams(mod))
        return new

    def extra_repr(self) -> str:
        # torch's: the output scale as a Python float, then only the non-default options
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={_pair(self.kernel_size)}, "
             f"stride={_pair(self.stride)}, scale={float(self.scale.array[0])}, "
             f"zero_point={int(self.zero_point.array[0])}")
        if _pair(self.padding) != (0, 0):
            s += f", padding={_pair(self.padding)}"
        if _pair(self.dilation) != (1, 1):
            s += f", dilation={_pair(self.dilation)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._packed_params.bias_array() is None:
            s += ", bias=False"
        return s

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    __repr__ = repr_hiding_packed_params  # one line, the packed weights hidden, as torch's


class LinearReLU(Linear):
    """``ao.nn.intrinsic.quantized.LinearReLU``: Linear with the ReLU in its requantization."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"


class ConvReLU2d(Conv2d):
    """``ao.nn.intrinsic.quantized.ConvReLU2d``."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"


class _OnIntRepr(Module):
    """Runs a float module that commutes with the affine map on ``x_q - zx``."""

    def __init__(self, float_module: Module):
        super().__init__()
        self.float_module = float_module

    def forward(self, x):
        if isinstance(x, Tensor):  # a float region of a partly quantized model
            return self.float_module(x)
        _need_q(x, type(self).__name__)
        xf = x._q.astype(np.float32) - np.float32(x._zero_point)
        with no_grad():
            y = self.float_module(_wrap(xf)).array
        y += np.float32(x._zero_point)
        return QuantizedTensor(y.astype(x.dtype.np_dtype), x._scale, x._zero_point, x.dtype)

    @classmethod
    def from_float(cls, mod):
        return cls(mod)

    def __repr__(self) -> str:
        # torch keeps these float modules in a converted model (they take quantized tensors)
        return repr(self.float_module)


class ReLU(_OnIntRepr):
    pass


class MaxPool2d(_OnIntRepr):
    pass


class Flatten(_OnIntRepr):
    pass


class Dropout(_OnIntRepr):
    def forward(self, x):
        return x  # inference only: dropout is the identity


class Identity(_OnIntRepr):
    def forward(self, x):
        return x


def _adaptive_bounds(size: int, out: int, i: int):
    return (i * size) // out, -(-((i + 1) * size) // out)


class AdaptiveAvgPool2d(_OnIntRepr):
    """torch's quantized ``adaptive_avg_pool2d`` (the input's scale and zero point kept): per
    output cell the int32 sum of the window minus ``zero_point * size``, times the float32
    ``1 / size``, plus the zero point, rounded half to even (the zero point is added before
    rounding, as torch's kernel does: 4 of 179,200 cells differed from torch in a probe of
    channels-last and NCHW inputs, window sizes 1 to 16, zero points 0 to 64)."""

    def forward(self, x):
        if isinstance(x, Tensor):
            return self.float_module(x)
        _need_q(x, "AdaptiveAvgPool2d")
        q = x._q
        h, w = q.shape[-2:]
        osz = self.float_module.output_size
        oh, ow = (osz, osz) if isinstance(osz, int) else osz
        oh, ow = h if oh is None else oh, w if ow is None else ow
        zp = np.float32(x._zero_point)
        out = np.empty(q.shape[:-2] + (oh, ow), np.float32)
        for i in range(oh):
            h0, h1 = _adaptive_bounds(h, oh, i)
            for j in range(ow):
                w0, w1 = _adaptive_bounds(w, ow, j)
                size = (h1 - h0) * (w1 - w0)
                acc = q[..., h0:h1, w0:w1].astype(np.int64).sum((-2, -1)) - x._zero_point * size
                out[..., i, j] = acc.astype(np.float32) * (np.float32(1.0) / np.float32(size)) + zp
        out = np.clip(np.rint(out), x.dtype.qmin, x.dtype.qmax).astype(x.dtype.np_dtype)
        return QuantizedTensor(out, x._scale, x._zero_point, x.dtype)


class ReLU6(Module):
    """``ao.nn.quantized.ReLU6``: the integers clamped to ``[zero_point, six]``, ``six`` being
    6.0 quantized with the input's qparams (``zero_point + nearbyint(6 / scale)``); the
    input's scale and zero point kept, as torch's ``quantized::relu6``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        _need_q(x, "ReLU6")
        d = x.dtype
        six = x._zero_point + np.rint(np.float32(6.0) * (np.float32(1.0) / np.float32(x._scale)))
        six = int(min(max(six, d.qmin), d.qmax))
        q = np.clip(x._q, np.asarray(x._zero_point, x._q.dtype), np.asarray(six, x._q.dtype))
        return QuantizedTensor(q, x._scale, x._zero_point, d)

    @classmethod
    def from_float(cls, mod):
        return cls(mod.inplace)

    def _get_name(self) -> str:
        return "QuantizedReLU6"


class Hardswish(Module):
    """``ao.nn.quantized.Hardswish``: output qparams from the observer; torch's x86 kernel:
    dequantize, ``x * clamp(x + 3, 0, 6) / 6`` in float32, quantize, with its vector and
    scalar loops' roundings (``qparams.dequantize_elementwise`` / ``quantize_elementwise``)."""

    def __init__(self, scale: float, zero_point: int):
        super().__init__()
        self.register_buffer("scale", _wrap(np.array(scale, np.float32)))
        self.register_buffer("zero_point", _wrap(np.array(zero_point, np.int64)))

    def forward(self, x):
        _need_q(x, "Hardswish")
        v = dequantize_elementwise(x._q, x._scale, x._zero_point)
        y = (v * np.clip(v + np.float32(3), np.float32(0), np.float32(6))) / np.float32(6)
        s, z = float(self.scale.array), int(self.zero_point.array)
        q = quantize_elementwise(y, s, z, quint8.qmin, quint8.qmax, quint8.np_dtype)
        return QuantizedTensor(q, s, z, quint8)

    @classmethod
    def from_float(cls, mod):
        return cls(*_output_qparams(mod))

    def _get_name(self) -> str:
        return "QuantizedHardswish"
