"""Fake quantization: round to the int8 grid and back in float, for quantization-aware
training (QAT), with PyTorch's functions and ``FakeQuantize`` module.

``fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max)``::

    q = zero_point + nearbyint(x * (1 / scale))         # float32 reciprocal, as PyTorch
    y = (clamp(q, quant_min, quant_max) - zero_point) * scale

Backward is the straight-through estimator masked to the clamp range (PyTorch's
``fake_quantize_*_cachemask``): ``dx = dy`` where ``quant_min <= q <= quant_max``, else 0.
Scale and zero point get no gradient (the learnable LSQ variants are not built).
``fake_quantize_per_channel_affine`` does the same with one (scale, zero point) per index of
``axis``.

``FakeQuantize(observer, quant_min, quant_max, **observer_kwargs)``: each forward (training
or not) first feeds the observer (if ``observer_enabled``) and copies its qparams into the
``scale`` / ``zero_point`` buffers, then fake-quantizes (if ``fake_quant_enabled``). Same
buffers and state_dict keys as PyTorch. ``enable_observer`` / ``disable_observer`` /
``enable_fake_quant`` / ``disable_fake_quant`` are for ``model.apply``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..autograd.tensor import Tensor, _wrap
from ..nn.module import Module
from .observer import (
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _WithArgs,
)
from .qparams import _broadcast, choose_qparams_dynamic

__all__ = [
    "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine", "FakeQuantize",
    "FusedMovingAvgObsFakeQuantize", "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
    "default_fused_per_channel_wt_fake_quant",
    "FakeQuantizeBase", "default_fake_quant", "default_weight_fake_quant",
    "default_per_channel_weight_fake_quant", "enable_observer", "disable_observer",
    "enable_fake_quant", "disable_fake_quant",
]


class _FakeQuantize(Function):
    save_inputs = ()

    def forward(self, x, *, scale, zero_point, quant_min, quant_max, axis):
        # PyTorch's CPU kernels: per tensor computes in float32 for every input dtype; per
        # channel computes in the input dtype (with float32 scales)
        ct = np.float64 if x.dtype == np.float64 and axis is not None else np.float32
        inv = _broadcast(np.float32(1.0) / np.asarray(scale, np.float32), x.ndim, axis).astype(ct)
        s = _broadcast(np.asarray(scale, np.float32), x.ndim, axis).astype(ct)
        zp = _broadcast(np.asarray(zero_point, np.float64), x.ndim, axis).astype(ct)
        q = np.rint(x.astype(ct, copy=False) * inv)
        q += zp
        self.mask = (q >= quant_min) & (q <= quant_max)
        np.clip(q, quant_min, quant_max, out=q)
        q -= zp
        q *= s
        return q.astype(x.dtype, copy=False)

    def backward(self, g):
        return g * self.mask


def _scalar(v, what, cast):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise ValueError(f"{what}: expected one value, got shape {tuple(v.shape)}")
        return cast(v.array.reshape(-1)[0])
    return cast(v)


def _check_range(quant_min, quant_max, fn):
    if not quant_min <= quant_max:
        raise ValueError(f"{fn}: expected quant_min <= quant_max, got {quant_min} and {quant_max}")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min: int, quant_max: int):
    """``torch.fake_quantize_per_tensor_affine`` (see the module docstring)."""
    _check_range(quant_min, quant_max, "fake_quantize_per_tensor_affine")
    scale = _scalar(scale, "fake_quantize_per_tensor_affine scale", float)
    zero_point = _scalar(zero_point, "fake_quantize_per_tensor_affine zero_point", int)
    if not quant_min <= zero_point <= quant_max:
        raise ValueError(
            f"fake_quantize_per_tensor_affine: zero_point {zero_point} is outside "
            f"[quant_min, quant_max] = [{quant_min}, {quant_max}]"
        )
    return _FakeQuantize.apply(input, scale=scale, zero_point=zero_point, quant_min=int(quant_min),
                               quant_max=int(quant_max), axis=None)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis: int, quant_min: int,
                                     quant_max: int):
    """``torch.fake_quantize_per_channel_affine``: per-index-of-``axis`` scale/zero point."""
    _check_range(quant_min, quant_max, "fake_quantize_per_channel_affine")
    s = np.asarray(scale.array if isinstance(scale, Tensor) else scale, np.float32).reshape(-1)
    z = np.asarray(zero_point.array if isinstance(zero_point, Tensor) else zero_point).reshape(-1)
    axis = axis % input.ndim
    if s.shape != (input.shape[axis],) or z.shape != s.shape:
        raise ValueError(
            f"fake_quantize_per_channel_affine: expected {input.shape[axis]} scales and zero "
            f"points (the size of axis {axis} of an input of shape {tuple(input.shape)}), got "
            f"{s.size} and {z.size}"
        )
    return _FakeQuantize.apply(input, scale=s, zero_point=z, quant_min=int(quant_min),
                               quant_max=int(quant_max), axis=axis)


def _flag(on: bool):
    return _wrap(np.array([1 if on else 0], dtype=np.uint8))


class FakeQuantizeBase(_WithArgs, Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", _flag(True))
        self.register_buffer("observer_enabled", _flag(True))

    def enable_fake_quant(self, enabled: bool = True):
        self.fake_quant_enabled.array[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True):
        self.observer_enabled.array[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)


class FakeQuantize(FakeQuantizeBase):
    """Observer + fake quantization (see the module docstring)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic: bool = False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        self.activation_post_process = observer(is_dynamic=is_dynamic, **observer_kwargs)
        app = self.activation_post_process
        self.quant_min, self.quant_max = app.quant_min, app.quant_max
        self.dtype, self.qscheme = app.dtype, app.qscheme
        self.is_dynamic = is_dynamic
        self.ch_axis = getattr(app, "ch_axis", -1)
        self.is_per_channel = app.qscheme.per_channel
        self.register_buffer("scale", _wrap(np.array([1.0], np.float32)))
        self.register_buffer("zero_point", _wrap(np.array([0], np.int32)))

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled.array[0] == 1:
            self.activation_post_process(X.detach())
            s, z = self.calculate_qparams()
            self.scale = _wrap(s.array.astype(np.float32))
            self.zero_point = _wrap(z.array.astype(np.int32))
        if self.fake_quant_enabled.array[0] == 1:
            if self.is_per_channel:
                X = fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                     self.quant_min, self.quant_max)
            else:
                X = fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, self.quant_min,
                                                    self.quant_max)
        return X

    def extra_repr(self) -> str:
        # torch's: the flag / scale / zero-point buffers printed as tensors
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={self.quant_min}, quant_max={self.quant_max}, dtype={self.dtype}, "
                f"qscheme={self.qscheme}, ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """PyTorch's fused observer + fake-quant (the x86 / qnnpack QAT default). Same moving
    average as its observer, but the scale / zero point used *during training* come from
    FBGEMM's ``ChooseQuantizationParams`` (``qparams.choose_qparams_dynamic``, with
    ``preserve_sparsity`` for symmetric schemes: e.g. per-channel int8 weights get
    ``scale = max(-min / 128, max / 127)``), per channel for per-channel schemes.
    ``calculate_qparams()`` (what ``convert`` uses) is the observer's formula, as in PyTorch."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          MovingAverageMinMaxObserver | MovingAveragePerChannelMinMaxObserver):
            raise ValueError(
                "FusedMovingAvgObsFakeQuantize works with MovingAverageMinMaxObserver or "
                f"MovingAveragePerChannelMinMaxObserver, got {type(self.activation_post_process).__name__}"
            )
        self.fake_quant_enabled = _wrap(np.array([1], np.int64))
        self.observer_enabled = _wrap(np.array([1], np.int64))
        self.is_symmetric_quant = self.qscheme.symmetric

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.quant_min}, quant_max={self.quant_max}, qscheme={self.qscheme}, "
                f"reduce_range={self.activation_post_process.reduce_range}")

    def forward(self, X):
        if self.observer_enabled.array[0] == 1:
            app = self.activation_post_process
            app(X.detach())
            lo, hi = np.atleast_1d(app.min_val.array), np.atleast_1d(app.max_val.array)
            qp = [choose_qparams_dynamic(a, b, self.quant_min, self.quant_max, self.is_symmetric_quant)
                  for a, b in zip(lo.tolist(), hi.tolist())]
            self.scale = _wrap(np.array([s for s, _ in qp], np.float32))
            self.zero_point = _wrap(np.array([z for _, z in qp], np.int32))
        if self.fake_quant_enabled.array[0] == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                        self.quant_min, self.quant_max)
            return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, self.quant_min,
                                                   self.quant_max)
        return X


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype="quint8",
    qscheme="per_tensor_affine", reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype="qint8",
    qscheme="per_tensor_symmetric", reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype="qint8",
    qscheme="per_channel_symmetric", reduce_range=False, ch_axis=0)


default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype="quint8")
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype="qint8",
    qscheme="per_tensor_symmetric")
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype="qint8",
    qscheme="per_channel_symmetric")


def _set(method, *args):
    def fn(mod):
        if isinstance(mod, FakeQuantizeBase):
            getattr(mod, method)(*args)
    return fn


enable_observer = _set("enable_observer")
disable_observer = _set("disable_observer")
enable_fake_quant = _set("enable_fake_quant")
disable_fake_quant = _set("disable_fake_quant")
