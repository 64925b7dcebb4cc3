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

``fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max,
scale, zero_point, averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
symmetric_quant=False)`` is ``FusedMovingAvgObsFakeQuantize``'s step as one function: with
``observer_on`` the running min/max move toward this batch's (taken at once while they are
infinite) and ``scale``/``zero_point`` are recomputed in place (FBGEMM's rule, sparsity
preserved when ``symmetric_quant``), per row of ``ch_axis`` with ``per_row_fake_quant``;
with ``fake_quant_on`` the input is fake-quantized (straight-through gradient), else returned.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from .fake_quantize import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine
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
           "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams",
           "fused_moving_avg_obs_fake_quant"]

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


def _moving_average(running: Tensor, batch: np.ndarray, averaging_const: float) -> None:
    r = running.array
    new = np.where(np.isinf(r), batch, r + np.float32(averaging_const) * (batch - r)).astype(r.dtype)
    running.array[...] = new
    running._version_counter[0] += 1


def _write(t: Tensor, values) -> None:
    t.array[...] = np.asarray(values, dtype=t.array.dtype).reshape(t.array.shape)
    t._version_counter[0] += 1


def fused_moving_avg_obs_fake_quant(input, observer_on, fake_quant_on, running_min, running_max, scale,
                                    zero_point, averaging_const, quant_min, quant_max, ch_axis,
                                    per_row_fake_quant=False, symmetric_quant=False):
    """``torch.fused_moving_avg_obs_fake_quant`` (see the module docstring)."""
    if int(np.asarray(observer_on.array if isinstance(observer_on, Tensor) else observer_on).reshape(-1)[0]) == 1:
        x = input.detach().cpu().numpy().astype(np.float32)
        if per_row_fake_quant:
            rows = np.moveaxis(x, ch_axis, 0).reshape(x.shape[ch_axis], -1)
            lo, hi = rows.min(axis=1), rows.max(axis=1)
        else:
            lo, hi = np.array([x.min()], np.float32), np.array([x.max()], np.float32)
        _moving_average(running_min, lo.reshape(running_min.array.shape), averaging_const)
        _moving_average(running_max, hi.reshape(running_max.array.shape), averaging_const)
        qp = [choose_qparams_dynamic(a, b, quant_min, quant_max, symmetric_quant)
              for a, b in zip(np.atleast_1d(running_min.array).tolist(), np.atleast_1d(running_max.array).tolist())]
        _write(scale, [q[0] for q in qp])
        _write(zero_point, [q[1] for q in qp])
    if int(np.asarray(fake_quant_on.array if isinstance(fake_quant_on, Tensor) else fake_quant_on).reshape(-1)[0]) != 1:
        return input
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine(input, scale, zero_point, ch_axis, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)
