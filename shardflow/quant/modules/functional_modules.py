"""``FloatFunctional`` / ``QFunctional`` (``torch.ao.nn.quantized``): tensor arithmetic that
eager-mode quantization can observe and then run on integers.

A quantizable model writes ``self.skip_add = nn.quantized.FloatFunctional()`` and
``self.skip_add.add(x, y)`` where a float model writes ``x + y`` (the QAT tutorial's
MobileNetV2). In float, ``add`` / ``mul`` / ``cat`` / ``add_relu`` / ``matmul`` are the
torch ops with the result passed through ``activation_post_process`` (an ``Identity``, an
observer after ``prepare``, a ``FakeQuantize`` after ``prepare_qat``); ``add_scalar`` /
``mul_scalar`` are not observed, as in torch. ``convert`` swaps it for ``QFunctional``,
whose ``scale`` / ``zero_point`` are the observer's and whose ops take quint8
``QuantizedTensor``s, with PyTorch's CPU arithmetic:

* ``add`` / ``add_relu``: each input dequantized, summed in float32, clamped at 0 for
  ``add_relu``, requantized, with the roundings of torch's vector loop and of its scalar
  loop over the last ``numel % 64`` (AVX512; 32 with AVX2) values
  (``qparams.dequantize_elementwise`` / ``quantize_elementwise``).
* ``mul``: ``(qa - za) * (qb - zb)`` in int32, times the float32 multiplier
  ``sa * sb * (1 / scale)``, rounded (``lrintf``) plus the zero point, clamped.
* ``cat``: the integers joined when every input already has the output's qparams, else each
  dequantized, joined and quantized as ``quantize_per_tensor`` (torch's ``quantized::cat``).

``add_scalar`` / ``mul_scalar`` / ``matmul`` on integers (torch's ``quantized::add_scalar``
picks new qparams from the scalar; ``matmul`` requantizes an int32 product) raise
NotImplementedError naming the float workaround.
"""

from __future__ import annotations

import numpy as np

from ... import ops
from ...autograd.tensor import Tensor, _wrap
from ...nn import functional as F
from ...nn.module import Module
from ...nn.modules.linear import Identity
from ..qparams import dequantize_elementwise, quantize_array, quantize_elementwise
from ..qtensor import QuantizedTensor
from ..qtypes import quint8

__all__ = ["FloatFunctional", "QFunctional"]


class FloatFunctional(Module):
    """Float ops whose results an observer can see (use its methods, not ``forward``)."""

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying operation")

    def add(self, x, y):
        return self.activation_post_process(ops.add(x, y))

    def add_scalar(self, x, y):
        return ops.add(x, y)  # not observed: torch's quantized add_scalar needs no output qparams

    def mul(self, x, y):
        return self.activation_post_process(ops.mul(x, y))

    def mul_scalar(self, x, y):
        return ops.mul(x, y)

    def cat(self, x, dim: int = 0):
        return self.activation_post_process(ops.cat(x, dim=dim))

    def add_relu(self, x, y):
        return self.activation_post_process(F.relu(ops.add(x, y)))

    def matmul(self, x, y):
        return self.activation_post_process(ops.matmul(x, y))


def _need_quint8(x, what):
    if not isinstance(x, QuantizedTensor) or x._axis is not None or x.dtype is not quint8:
        got = type(x).__name__ if not isinstance(x, QuantizedTensor) else f"{x.dtype} {x.qscheme()}"
        raise TypeError(
            f"QFunctional.{what} expects per-tensor quint8 QuantizedTensors (the outputs of "
            f"quantized layers after convert), got {got}")
    return x


class QFunctional(Module):
    """The quantized form of :class:`FloatFunctional` (made by ``convert``)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = Identity()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = _wrap(np.array(self.scale, np.float64))
        destination[prefix + "zero_point"] = _wrap(np.array(self.zero_point, np.int64))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the underlying operation")

    def _out(self, c: np.ndarray) -> QuantizedTensor:
        # torch's quantized::cat of differing qparams: dequantize, cat, quantize_per_tensor
        # (the zero point added before rounding)
        q = quantize_array(c, self.scale, self.zero_point, quint8.qmin, quint8.qmax, quint8.np_dtype,
                           zero_point_first=True)
        return self.activation_post_process(QuantizedTensor(q, self.scale, self.zero_point, quint8))

    def _add(self, x, y, relu):
        x, y = _need_quint8(x, "add"), _need_quint8(y, "add")
        c = (dequantize_elementwise(x._q, x._scale, x._zero_point)
             + dequantize_elementwise(y._q, y._scale, y._zero_point))
        if relu:
            np.maximum(c, np.float32(0), out=c)
        q = quantize_elementwise(c, self.scale, self.zero_point, quint8.qmin, quint8.qmax, quint8.np_dtype)
        return self.activation_post_process(QuantizedTensor(q, self.scale, self.zero_point, quint8))

    def add(self, x, y):
        return self._add(x, y, relu=False)

    def add_relu(self, x, y):
        return self._add(x, y, relu=True)

    def mul(self, x, y):
        x, y = _need_quint8(x, "mul"), _need_quint8(y, "mul")
        acc = (x._q.astype(np.int32) - x._zero_point) * (y._q.astype(np.int32) - y._zero_point)
        multiplier = np.float32(np.float32(x._scale) * np.float32(y._scale)) * (np.float32(1) / np.float32(self.scale))
        q = np.rint(acc.astype(np.float32) * np.float32(multiplier)) + self.zero_point
        q = np.clip(q, quint8.qmin, quint8.qmax).astype(quint8.np_dtype)
        return self.activation_post_process(QuantizedTensor(q, self.scale, self.zero_point, quint8))

    def cat(self, x, dim: int = 0):
        xs = [_need_quint8(t, "cat") for t in x]
        if all(t._scale == self.scale and t._zero_point == self.zero_point for t in xs):
            q = np.concatenate([t._q for t in xs], axis=dim)
            return self.activation_post_process(QuantizedTensor(q, self.scale, self.zero_point, quint8))
        return self._out(np.concatenate([t.dequantize().array for t in xs], axis=dim))

    def add_scalar(self, x, y):
        raise NotImplementedError(
            "QFunctional.add_scalar (torch.ops.quantized.add_scalar) is not built in shardflow; "
            "keep the op in float: x.dequantize() + y, then a QuantStub")

    def mul_scalar(self, x, y):
        raise NotImplementedError(
            "QFunctional.mul_scalar (torch.ops.quantized.mul_scalar) is not built in shardflow; "
            "keep the op in float: x.dequantize() * y, then a QuantStub")

    def matmul(self, x, y):
        raise NotImplementedError(
            "QFunctional.matmul (torch.ops.quantized.matmul) is not built in shardflow; keep the "
            "op in float between a DeQuantStub and a QuantStub")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of FloatFunctional")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = cls()
        new_mod.scale = float(scale.reshape(-1)[0].item()) if isinstance(scale, Tensor) else float(scale)
        new_mod.zero_point = int(zero_point.reshape(-1)[0].item()) if isinstance(zero_point, Tensor) else int(zero_point)
        return new_mod
