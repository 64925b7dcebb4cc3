"""Dynamic int8 ``Linear`` (``torch.ao.nn.quantized.dynamic.Linear``).

Weights are quantized once (qint8, per tensor or per output channel, symmetric by default).
Activations are quantized per call: the batch's min / max give a uint8 scale and zero point
(FBGEMM's ``ChooseQuantizationParams``, range 0..127 under the x86/fbgemm engines, 0..255
under qnnpack), then::

    acc = int8_matmul(x_q, x_zp, w_q)                 # (M, N) int32, exact
    y   = acc * (x_scale * w_scale) + bias            # float32 out

Only the int8 weight is stored (1 byte per weight instead of 4).
"""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import Tensor, _wrap
from ...nn.module import Module
from ..engine import activation_reduce_range
from ..int8_gemm import int8_matmul
from ..qparams import choose_qparams_dynamic, quantize_array
from ..qtypes import per_channel_affine, per_tensor_affine, qint8
from .packed import PackedParams, quantize_weight, repr_hiding_packed_params

__all__ = ["Linear", "quantize_input_dynamic"]


def quantize_input_dynamic(x: np.ndarray):
    """uint8 values, scale, zero point of ``x`` for this call (see the module docstring)."""
    qmax = 127 if activation_reduce_range() else 255
    if x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo = hi = 0.0
    scale, zp = choose_qparams_dynamic(lo, hi, 0, qmax)
    return quantize_array(x, scale, zp, 0, qmax, np.uint8), scale, zp


class Linear(Module):
    """Float in, float out; int8 weights, activations quantized per call."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype="qint8",
                 per_channel: bool = False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self._packed_params = PackedParams((out_features, in_features), per_channel, bias_)

    def weight(self):
        """The quantized weight (a QuantizedTensor), as PyTorch's ``weight()``."""
        return self._packed_params.qweight()

    def bias(self):
        b = self._packed_params.bias_array()
        return None if b is None else _wrap(b.copy())

    def forward(self, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"dynamic quantized Linear takes a float Tensor, got {type(x).__name__}")
        a = x.array
        if a.shape[-1] != self.in_features:
            raise RuntimeError(
                f"dynamic quantized Linear: input has {a.shape[-1]} features (shape "
                f"{tuple(a.shape)}), expected {self.in_features}"
            )
        a2 = a.reshape(-1, self.in_features)  # (M, K)
        q, sx, zx = quantize_input_dynamic(a2)
        p = self._packed_params
        acc = int8_matmul(q, zx, p.weight.array, p.w_zp())  # (M, N) int32
        y = acc.astype(np.float32)
        y *= (np.float32(sx) * p.w_scale()).astype(np.float32)
        b = p.bias_array()
        if b is not None:
            y += b
        return _wrap(y.reshape(a.shape[:-1] + (self.out_features,)))

    @classmethod
    def from_float(cls, mod, weight_observer=None):
        """Quantize a float ``nn.Linear`` with ``mod.qconfig.weight`` (or ``weight_observer``)."""
        if weight_observer is None:
            qconfig = getattr(mod, "qconfig", None)
            if qconfig is None:
                raise ValueError(
                    "dynamic Linear.from_float: the module has no qconfig; set mod.qconfig "
                    "(e.g. default_dynamic_qconfig) or pass weight_observer"
                )
            weight_observer = qconfig.weight()
        q, scale, zp, per_channel = quantize_weight(mod.weight.array, weight_observer)
        new = cls(mod.in_features, mod.out_features, mod.bias is not None, per_channel=per_channel)
        new._packed_params.set(q, scale, zp, None if mod.bias is None else mod.bias.array)
        return new

    def extra_repr(self) -> str:
        # torch's: the weight's dtype and scheme as the library names them
        scheme = per_channel_affine if self._packed_params.per_channel else per_tensor_affine
        return (f"in_features={self.in_features}, out_features={self.out_features}, dtype={qint8}, "
                f"qscheme={scheme}")

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    __repr__ = repr_hiding_packed_params  # one line, the packed weights hidden, as torch's
