"""``PackedParams``: the int8 weight of a quantized layer with its scales, zero points and
float bias, stored as plain buffers (state_dict keys ``<layer>._packed_params.weight`` etc.).

PyTorch keeps an opaque FBGEMM-packed blob there; here the buffers are the int8 weight
``(out, in[, kh, kw])``, ``scale`` / ``zero_point`` (one value, or one per output channel)
and ``bias`` (float32, or an empty array for none), so a quantized model saves 1 byte per
weight and loads with the ordinary ``load_state_dict`` shape checks.
"""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import _wrap
from ...nn.module import Module, module_repr
from ..qparams import quantize_array
from ..qtensor import QuantizedTensor
from ..qtypes import qint8

__all__ = ["PackedParams", "quantize_weight", "repr_hiding_packed_params"]


def repr_hiding_packed_params(module) -> str:
    """torch's ``_hide_packed_params_repr``: the module's printout without its packed-weight
    children (a quantized Linear prints on one line, as torch's)."""
    return module_repr(module, ((key, child) for key, child in module._modules.items()
                                if not isinstance(child, PackedParams)))


def quantize_weight(weight: np.ndarray, observer):
    """Run ``observer`` on ``weight`` and quantize it to qint8 with the qparams it gives:
    ``(int8 weight, scale (C,) float32, zero_point (C,) int32, per_channel)``."""
    observer(_wrap(weight))
    scale, zp = observer.calculate_qparams()
    scale, zp = scale.array.astype(np.float32), zp.array.astype(np.int32)
    per_channel = observer.qscheme.per_channel
    if observer.dtype is not qint8:
        raise ValueError(
            f"quantized layers take qint8 weights; the weight observer has dtype {observer.dtype}. "
            "Fix: use a weight observer with dtype=qint8 (e.g. default_weight_observer)"
        )
    if per_channel:
        if getattr(observer, "ch_axis", 0) != 0:
            raise ValueError("per-channel weight observers must use ch_axis=0 (output channels)")
        q = quantize_array(weight, scale, zp, qint8.qmin, qint8.qmax, np.int8, axis=0)
    else:
        q = quantize_array(weight, scale[0], zp[0], qint8.qmin, qint8.qmax, np.int8)
    return q, scale, zp, per_channel


class PackedParams(Module):
    def __init__(self, weight_shape, per_channel: bool = False, bias: bool = True):
        super().__init__()
        n = weight_shape[0] if per_channel else 1
        self.register_buffer("weight", _wrap(np.zeros(weight_shape, np.int8)))
        self.register_buffer("scale", _wrap(np.ones(n, np.float32)))
        self.register_buffer("zero_point", _wrap(np.zeros(n, np.int32)))
        self.register_buffer("bias", _wrap(np.zeros(weight_shape[0] if bias else 0, np.float32)))
        self.per_channel = per_channel

    def set(self, q, scale, zero_point, bias):
        self.weight.array[...] = q
        self.scale.array[...] = scale
        self.zero_point.array[...] = zero_point
        if bias is not None:
            self.bias.array[...] = bias

    def has_bias(self) -> bool:
        return self.bias.array.size > 0

    def bias_array(self):
        return self.bias.array if self.has_bias() else None

    def w_zp(self):
        """Zero points in the form int8_matmul takes: a scalar, or one per output channel."""
        z = self.zero_point.array
        return z if self.per_channel else int(z[0])

    def w_scale(self):
        s = self.scale.array
        return s if self.per_channel else s[0]

    def qweight(self) -> QuantizedTensor:
        if self.per_channel:
            return QuantizedTensor(self.weight.array.copy(), self.scale.array, self.zero_point.array,
                                   qint8, axis=0)
        return QuantizedTensor(self.weight.array.copy(), float(self.scale.array[0]),
                               int(self.zero_point.array[0]), qint8)

    def extra_repr(self) -> str:
        return f"weight={tuple(self.weight.shape)}, per_channel={self.per_channel}, bias={self.has_bias()}"
