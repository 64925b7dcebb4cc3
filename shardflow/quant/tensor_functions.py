"""torch's top-level functions over quantized tensors: ``int_repr``, ``q_scale``,
``q_zero_point``, ``q_per_channel_scales``, ``q_per_channel_zero_points``,
``q_per_channel_axis`` (each ``input.<name>()``: a ``QuantizedTensor``'s accessor, torch's
NotImplementedError for a float tensor), ``quantize_per_tensor_dynamic`` and the qscheme
type and constants (``torch.qscheme``, ``per_tensor_affine`` ...).

``quantize_per_tensor_dynamic(input, dtype, reduce_range)`` picks the scale and zero point
from the input's range as torch's dynamic quantization does (FBGEMM's
``ChooseQuantizationParams``, ``qparams.choose_qparams_dynamic``) and quantizes with them;
``quint8`` and ``qint8`` only, as torch. ``per_channel_affine_float_qparams`` (float zero
points, embedding quantization) is the constant only: no observer or quantizer here takes it.
"""

from __future__ import annotations

import numpy as np

from .qparams import choose_qparams_dynamic, quant_range
from .qtensor import QuantizedTensor, quantize_per_tensor
from .qtypes import (
    QScheme,
    as_qdtype,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    quint8,
)

__all__ = ["int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
           "q_per_channel_axis", "quantize_per_tensor_dynamic", "qscheme", "per_tensor_affine",
           "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"]

qscheme = QScheme  # torch.qscheme: the type of the scheme constants
per_channel_affine_float_qparams = QScheme("per_channel_affine_float_qparams", True, False)


def _accessor(name):
    def fn(input):
        return getattr(input, name)()  # QuantizedTensor's accessor, or Tensor's refusal

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input)``: ``input.{name}()``."
    return fn


int_repr = _accessor("int_repr")
q_scale = _accessor("q_scale")
q_zero_point = _accessor("q_zero_point")
q_per_channel_scales = _accessor("q_per_channel_scales")
q_per_channel_zero_points = _accessor("q_per_channel_zero_points")
q_per_channel_axis = _accessor("q_per_channel_axis")


def quantize_per_tensor_dynamic(input, dtype, reduce_range) -> QuantizedTensor:
    """Quantize ``input`` per tensor with qparams chosen from its min and max (see above)."""
    d = as_qdtype(dtype)
    if d not in (quint8, qint8):
        raise RuntimeError(f"dtype {d.name} not supported by quantize_per_tensor_dynamic: expected quint8 or "
                           "qint8; use quantize_per_tensor(x, scale, zero_point, qint32) for 32-bit integers")
    x = input.detach().cpu().numpy().astype(np.float32)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    qmin, qmax = quant_range(d, reduce_range)
    scale, zero_point = choose_qparams_dynamic(lo, hi, qmin, qmax)
    return quantize_per_tensor(input, scale, zero_point, d)
