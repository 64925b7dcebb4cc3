"""Observers: modules that record the range of what passes through them and turn it into a
scale and zero point (``torch.ao.quantization.observer``, same names, defaults and buffers).

* ``MinMaxObserver``: running min / max over every batch seen (``min_val``, ``max_val``).
* ``MovingAverageMinMaxObserver``: ``min = min + c * (batch_min - min)`` (``c`` =
  ``averaging_constant`` = 0.01); the first batch sets the range.
* ``PerChannelMinMaxObserver`` / ``MovingAveragePerChannelMinMaxObserver``: the same per
  index of ``ch_axis`` (weights: one range per output channel).
* ``PlaceholderObserver``: records nothing; carries the dtype (and ``is_dynamic``) for
  dynamic quantization, where activations are quantized per batch at run time.

``forward(x)`` returns ``x`` unchanged (no gradient flows into the statistics).
``calculate_qparams()`` returns ``(scale, zero_point)`` Tensors computed as PyTorch's
``_calculate_qparams`` does (see ``qparams.calculate_qparams``). ``Observer.with_args(**kw)``
makes a factory, as in PyTorch's QConfig.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..autograd.tensor import Tensor, _wrap
from ..nn.module import Module
from .qparams import EPS, calculate_qparams, quant_range
from .qtypes import _SCHEMES as _QSCHEMES_BY_NAME
from .qtypes import _scheme, as_qdtype, qint8, quint8

__all__ = [
    "ObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver", "PlaceholderObserver", "NoopObserver",
    "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
    "default_dynamic_quant_observer", "default_placeholder_observer",
]



def _unobserved_qparams():
    """PyTorch's answer to ``calculate_qparams`` before any observation: a warning (naming
    the caller of ``calculate_qparams``), then scale 1 and zero point 0."""
    warnings.warn(
        "must run observer before calling calculate_qparams; returning default "
        "values (scale 1, zero point 0)", stacklevel=3,
    )
    return _wrap(np.array([1.0], np.float32)), _wrap(np.array([0], np.int64))

def _torch_path_repr(v) -> str:
    """``repr`` of a with_args keyword as torch prints it: a class by its
    ``torch.ao.quantization`` module path (shardflow's live in ``shardflow.quant``; the
    histogram observer is in torch's ``observer`` module), a qscheme named by a string as
    the qscheme object (``shardflow.per_tensor_symmetric``), a dtype likewise."""
    if isinstance(v, type) and v.__module__.startswith("shardflow.quant."):
        sub = v.__module__.rpartition(".")[2]
        sub = "observer" if sub == "histogram" else sub
        return f"<class 'shardflow.ao.quantization.{sub}.{v.__qualname__}'>"
    if isinstance(v, str) and v in _QSCHEMES_BY_NAME:
        return repr(_QSCHEMES_BY_NAME[v])
    if isinstance(v, str) and v in ("quint8", "qint8", "qint32"):
        return repr(as_qdtype(v))
    return repr(v)


class _PartialWithRepr(functools.partial):
    def __repr__(self) -> str:
        # torch's _PartialWrapper prints the partial and its (empty) callable_args dict
        kw = ", ".join(f"{k}={_torch_path_repr(v)}" for k, v in self.keywords.items())
        return f"functools.partial({_torch_path_repr(self.func)}, {kw}){{}}"

    def with_args(self, **kwargs):
        return _PartialWithRepr(self.func, **{**self.keywords, **kwargs})


class _WithArgs:
    @classmethod
    def with_args(cls, **kwargs):
        """A factory for this class with these constructor arguments (``QConfig`` fields)."""
        return _PartialWithRepr(cls, **kwargs)


def _data(x):
    if not isinstance(x, Tensor):
        raise TypeError(f"observers take a float Tensor, got {type(x).__name__}")
    return x.array


class ObserverBase(_WithArgs, Module):
    """dtype / qscheme / range bookkeeping shared by the observers."""

    def __init__(self, dtype=quint8, qscheme="per_tensor_affine", reduce_range: bool = False,
                 quant_min=None, quant_max=None, eps=float(EPS), is_dynamic: bool = False):
        super().__init__()
        self.dtype = as_qdtype(dtype)
        self.qscheme = _scheme(qscheme)
        self.reduce_range = reduce_range
        self.is_dynamic = is_dynamic
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if (quant_min is None) != (quant_max is None):
            raise ValueError("give both quant_min and quant_max, or neither (the dtype's range)")
        self.quant_min, self.quant_max = quant_range(self.dtype, reduce_range,
                                                     quant_min, quant_max)
        self.register_buffer("eps", _wrap(np.array([eps], dtype=np.float32)))

    def _qparams(self, min_val, max_val):
        scale, zp = calculate_qparams(min_val, max_val, self.quant_min, self.quant_max,
                                      self.qscheme.symmetric, self.dtype, self.has_customized_qrange,
                                      self.eps.array[0])
        return _wrap(np.atleast_1d(scale)), _wrap(np.atleast_1d(zp).astype(np.int64))  # (1,) per tensor

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, qscheme={self.qscheme}, quant_min={self.quant_min}, quant_max={self.quant_max}"


class MinMaxObserver(ObserverBase):
    """Running min / max of every tensor seen; per tensor."""

    def __init__(self, dtype=quint8, qscheme="per_tensor_affine", reduce_range: bool = False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=float(EPS),
                 is_dynamic: bool = False):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        if self.qscheme.per_channel:
            raise NotImplementedError(
                f"{type(self).__name__} is per tensor, got qscheme {self.qscheme}; use "
                "PerChannelMinMaxObserver for per-channel schemes"
            )
        self.register_buffer("min_val", _wrap(np.array(np.inf, dtype=np.float32)))
        self.register_buffer("max_val", _wrap(np.array(-np.inf, dtype=np.float32)))

    def forward(self, x_orig):
        x = _data(x_orig)
        if x.size == 0:
            return x_orig
        lo, hi = np.float32(x.min()), np.float32(x.max())
        self._update(lo, hi)
        return x_orig

    def _update(self, lo, hi):
        self.min_val.array[...] = min(self.min_val.array, lo)
        self.max_val.array[...] = max(self.max_val.array, hi)

    def calculate_qparams(self):
        if not np.isfinite(self.min_val.array) or not np.isfinite(self.max_val.array):
            return _unobserved_qparams()
        return self._qparams(self.min_val.array, self.max_val.array)

    def reset_min_max_vals(self):
        self.min_val.array[...] = np.inf
        self.max_val.array[...] = -np.inf

    def extra_repr(self) -> str:
        # torch's: a 0-d min/max formats as its float (``min_val=inf``), per channel as a tensor
        return f"min_val={self.min_val}, max_val={self.max_val}"



class MovingAverageMinMaxObserver(MinMaxObserver):
    """Exponential moving average of each batch's min / max (the first batch sets them)."""

    def __init__(self, averaging_constant: float = 0.01, dtype=quint8, qscheme="per_tensor_affine",
                 reduce_range: bool = False, quant_min=None, quant_max=None, eps=float(EPS),
                 is_dynamic: bool = False, **kwargs):
        self.averaging_constant = averaging_constant
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic)

    def _update(self, lo, hi):
        mn, mx = self.min_val.array, self.max_val.array
        c = np.float32(self.averaging_constant)
        if mn == np.inf and mx == -np.inf:
            mn[...], mx[...] = lo, hi
        else:
            mn[...] = mn + c * (lo - mn)
            mx[...] = mx + c * (hi - mx)


class PerChannelMinMaxObserver(ObserverBase):
    """Running min / max per index of ``ch_axis`` (weights: per output channel)."""

    def __init__(self, ch_axis: int = 0, dtype=quint8, qscheme="per_channel_affine",
                 reduce_range: bool = False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=float(EPS), is_dynamic: bool = False):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        if not self.qscheme.per_channel:
            raise NotImplementedError(
                f"{type(self).__name__} is per channel, got qscheme {self.qscheme}; use "
                "MinMaxObserver for per-tensor schemes"
            )
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _wrap(np.zeros(0, np.float32)))
        self.register_buffer("max_val", _wrap(np.zeros(0, np.float32)))

    def forward(self, x_orig):
        x = _data(x_orig)
        if x.size == 0:
            return x_orig
        axis = self.ch_axis % x.ndim
        y = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)  # (C, rest)
        lo, hi = y.min(1).astype(np.float32), y.max(1).astype(np.float32)
        self._update(lo, hi)
        return x_orig

    def _update(self, lo, hi):
        if self.min_val.array.size == 0:
            self.min_val, self.max_val = _wrap(lo), _wrap(hi)
            return
        self._check_channels(lo)
        np.minimum(self.min_val.array, lo, out=self.min_val.array)
        np.maximum(self.max_val.array, hi, out=self.max_val.array)

    def _check_channels(self, lo):
        if lo.shape != self.min_val.array.shape:
            raise RuntimeError(
                f"{type(self).__name__}: axis {self.ch_axis} has {lo.shape[0]} channels but the "
                f"observer has seen {self.min_val.array.shape[0]}; use one observer per tensor"
            )

    def calculate_qparams(self):
        if self.min_val.array.size == 0:
            return _unobserved_qparams()
        return self._qparams(self.min_val.array, self.max_val.array)

    def reset_min_max_vals(self):
        self.min_val, self.max_val = _wrap(np.zeros(0, np.float32)), _wrap(np.zeros(0, np.float32))

    def extra_repr(self) -> str:
        # torch's: a 0-d min/max formats as its float (``min_val=inf``), per channel as a tensor
        return f"min_val={self.min_val}, max_val={self.max_val}"



class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel exponential moving average of min / max (QAT weight observer)."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0, dtype=quint8,
                 qscheme="per_channel_affine", reduce_range: bool = False, quant_min=None,
                 quant_max=None, eps=float(EPS), is_dynamic: bool = False, **kwargs):
        self.averaging_constant = averaging_constant
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic)

    def _update(self, lo, hi):
        if self.min_val.array.size == 0:
            self.min_val, self.max_val = _wrap(lo), _wrap(hi)
            return
        self._check_channels(lo)
        c = np.float32(self.averaging_constant)
        mn, mx = self.min_val.array, self.max_val.array
        mn += c * (lo - mn)
        mx += c * (hi - mx)


class PlaceholderObserver(_WithArgs, Module):
    """Observes nothing; holds ``dtype`` (and ``is_dynamic``) for the convert step."""

    def __init__(self, dtype=np.float32, custom_op_name: str = "", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype if dtype in (np.float32, np.float16, "float16", "float32") else as_qdtype(dtype)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme = qscheme
        self.is_dynamic = is_dynamic

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise RuntimeError(
            "PlaceholderObserver has no quantization parameters (it is for dynamic quantization, "
            "where activations are quantized per batch at run time)"
        )


class NoopObserver(PlaceholderObserver):
    pass


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme="per_tensor_symmetric")
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme="per_channel_symmetric")
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
