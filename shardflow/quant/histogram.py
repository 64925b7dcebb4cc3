"""``HistogramObserver``: PyTorch's activation observer for the x86/fbgemm/qnnpack default
qconfigs, ported to NumPy with PyTorch's float32 arithmetic.

Algorithm (``torch.ao.quantization.HistogramObserver``):

1. Keep a 2048-bin histogram of everything seen over ``[min_val, max_val]``. A batch that
   widens the range is binned over the new range, and the old histogram is mapped onto it by
   splitting each old bin into 16 equal parts placed by their mid-points.
2. ``calculate_qparams`` searches for the clipping range ``[start_bin, end_bin]``: starting
   from the whole histogram, repeatedly drop whichever tail holds the smaller mass
   (quantile steps of 1e-5) while the L2 quantization error of the histogram, quantized to
   ``2^8`` levels over the candidate range (each source bin's density spread uniformly over
   it), keeps decreasing (caffe2's ``NonlinearQuantizationParamsSearch``).
3. Scale and zero point of that range as ``MinMaxObserver`` computes them.

Every float op is done in float32 in PyTorch's order (histogram bin index
``floor((x - lo) * bins / (hi - lo))``, ``linspace`` from both ends, Python-style floor
division), so the qparams match PyTorch's; sums of the error vector may differ in the last
bit, which could only change a tie in the search.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.tensor import _wrap
from .observer import ObserverBase, _data
from .qparams import EPS
from .qtypes import quint8

__all__ = ["HistogramObserver", "default_histogram_observer"]

f32 = np.float32


def _histc(x: np.ndarray, bins: int, lo, hi) -> np.ndarray:
    """``torch.histc`` on float32: values outside [lo, hi] are dropped, hi falls in the last bin."""
    lo, hi = f32(lo), f32(hi)
    if lo == hi:
        lo, hi = f32(lo - f32(1)), f32(hi + f32(1))
    x = x[(x >= lo) & (x <= hi)]
    pos = np.floor((x - lo) * f32(bins) / (hi - lo)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return np.bincount(pos, minlength=bins).astype(np.float32)


def _linspace(start, end, steps: int) -> np.ndarray:
    """``torch.linspace`` in float32: the first half counted from ``start``, the rest from ``end``."""
    start, end = f32(start), f32(end)
    step = f32((end - start) / f32(steps - 1))
    idx = np.arange(steps)
    half = steps // 2
    out = np.empty(steps, np.float32)
    out[:half] = start + step * idx[:half].astype(np.float32)
    out[half:] = end - step * (steps - idx[half:] - 1).astype(np.float32)
    return out


def _floor_div(a: np.ndarray, b) -> np.ndarray:
    """PyTorch's ``div(a, b, rounding_mode='floor')`` for floats (Python's ``//``)."""
    b = f32(b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = div - ((mod != 0) & ((b < 0) != (mod < 0))).astype(np.float32)
    floordiv = np.floor(div)
    floordiv += (div - floordiv > f32(0.5)).astype(np.float32)
    return floordiv.astype(np.float32)


class HistogramObserver(ObserverBase):
    """See the module docstring. Per tensor only, as in PyTorch."""

    def __init__(self, bins: int = 2048, dtype=quint8, qscheme="per_tensor_affine",
                 reduce_range: bool = False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=float(EPS), is_dynamic: bool = False, **kwargs):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        if self.qscheme.per_channel:
            raise NotImplementedError(
                "HistogramObserver supports per_tensor_symmetric and per_tensor_affine only; use "
                "PerChannelMinMaxObserver for per-channel schemes"
            )
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        self.bins = bins
        self.register_buffer("histogram", _wrap(np.zeros(bins, np.float32)))
        self.register_buffer("min_val", _wrap(np.array(np.inf, np.float32)))
        self.register_buffer("max_val", _wrap(np.array(-np.inf, np.float32)))
        self.dst_nbins = 2 ** (self.dtype.np_dtype.itemsize * 8)
        self.upsample_rate = 16

    # -- histogram bookkeeping
    def _upscale_histogram(self, hist, orig_min, orig_max, new_min, new_max):
        up = self.upsample_rate
        h = np.repeat(hist, up) / f32(up)  # (bins * up,)
        bin_size = f32((orig_max - orig_min) / f32(self.bins * up))
        mids = _linspace(orig_min, orig_max, self.bins * up + 1)[:-1] + f32(0.5) * bin_size
        bounds = _linspace(new_min, new_max, self.bins + 1)
        b = np.searchsorted(bounds, mids, side="right") - 1
        np.clip(b, 0, self.bins - 1, out=b)
        out = np.zeros(self.bins, np.float32)
        np.add.at(out, b, h)  # float32, sequential: torch.bincount's accumulation
        return out

    def _combine(self, hist, orig_min, orig_max, update, new_min, new_max):
        if orig_min == orig_max:
            return _histc(np.array([orig_min], np.float32), self.bins, new_min, new_max) * f32(hist.sum()) + update
        return update + self._upscale_histogram(hist, orig_min, orig_max, new_min, new_max)

    def forward(self, x_orig):
        x = _data(x_orig).astype(np.float32, copy=False).reshape(-1)
        if x.size == 0:
            return x_orig
        x_min, x_max = f32(x.min()), f32(x.max())
        if np.isinf(x_min) or np.isinf(x_max):
            warnings.warn("inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[np.abs(x) != np.inf]
            if x.size == 0:
                return x_orig
            x_min, x_max = f32(x.min()), f32(x.max())
        cur_min, cur_max = f32(self.min_val.array), f32(self.max_val.array)
        if cur_min == np.inf or cur_max == -np.inf:
            self.min_val.array[...], self.max_val.array[...] = x_min, x_max
            self.histogram.array[...] = _histc(x, self.bins, x_min, x_max)
            return x_orig
        new_min, new_max = min(cur_min, x_min), max(cur_max, x_max)
        update = _histc(x, self.bins, new_min, new_max)
        if new_min == cur_min and new_max == cur_max:
            self.histogram.array[...] = self.histogram.array + update
        else:
            self.histogram.array[...] = self._combine(self.histogram.array, cur_min, cur_max, update,
                                                      new_min, new_max)
            self.min_val.array[...], self.max_val.array[...] = new_min, new_max
        return x_orig

    # -- the search
    @staticmethod
    def _norm(delta_begin, delta_end, density):
        return density * ((delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / f32(3))

    def _quantization_error(self, start_bin: int, end_bin: int) -> float:
        bin_width = (float(self.max_val.array) - float(self.min_val.array)) / self.bins
        dst_w = bin_width * (end_bin - start_bin + 1) / self.dst_nbins
        if dst_w == 0.0:
            return 0.0
        src = np.arange(self.bins, dtype=np.int64)
        begin = (src - start_bin).astype(np.float32) * f32(bin_width)  # (bins,)
        end = begin + f32(bin_width)
        nmax = f32(self.dst_nbins - 1)
        of_begin = np.clip(_floor_div(begin, dst_w), f32(0), nmax)
        of_begin_center = (of_begin + f32(0.5)) * f32(dst_w)
        of_end = np.clip(_floor_div(end, dst_w), f32(0), nmax)
        density = self.histogram.array / f32(bin_width)
        half = f32(dst_w / 2)
        norm = np.zeros(self.bins, np.float32)
        norm += self._norm(begin - of_begin_center, np.full(self.bins, half, np.float32), density)
        norm += (of_end - of_begin - f32(1)) * self._norm(-half, half, density)
        of_end_center = of_end * f32(dst_w) + f32(dst_w / 2)
        norm += self._norm(-half, end - of_end_center, density)
        return float(norm.sum(dtype=np.float32))

    def _non_linear_param_search(self):
        hist = self.histogram.array
        bin_width = f32((self.max_val.array - self.min_val.array) / f32(self.bins))
        total = float(hist.sum(dtype=np.float32))
        csum = np.cumsum(hist, dtype=np.float32).tolist()
        stepsize, alpha, beta = 1e-5, 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            lo_t, hi_t = float(f32(next_alpha * total)), float(f32(next_beta * total))
            l, r = start_bin, end_bin
            while l < end_bin and csum[l] < lo_t:
                l += 1
            while r > start_bin and csum[r] > hi_t:
                r -= 1
            next_start, next_end = start_bin, end_bin
            if (l - start_bin) > (end_bin - r):
                next_start, alpha = l, next_alpha
            else:
                next_end, beta = r, next_beta
            if next_start == start_bin and next_end == end_bin:
                continue
            norm = self._quantization_error(next_start, next_end)
            if norm > norm_min:
                break
            norm_min, start_bin, end_bin = norm, next_start, next_end
        new_min = self.min_val.array + bin_width * f32(start_bin)
        new_max = self.min_val.array + bin_width * f32(end_bin + 1)
        return f32(new_min), f32(new_max)

    def calculate_qparams(self):
        if self.min_val.array == np.inf and self.max_val.array == -np.inf:
            warnings.warn(
                "must run observer before calling calculate_qparams; returning default "
                "values (scale 1, zero point 0)", stacklevel=2,
            )
            return _wrap(np.array([1.0], np.float32)), _wrap(np.array([0], np.int64))
        return self._qparams(*self._non_linear_param_search())

    def extra_repr(self) -> str:
        return f"min_val={float(self.min_val.array)}, max_val={float(self.max_val.array)}"


default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
