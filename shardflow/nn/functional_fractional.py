"""Fractional max pooling (Graham, 2014), ``torch.nn.functional``'s ``fractional_max_pool2d`` /
``fractional_max_pool3d`` and their ``*_with_indices`` forms, re-exported by ``functional.py``.

Algorithm (torch's ``generate_intervals``, per (sample, channel) plane and per spatial dim):
with ``u`` the plane's random sample for that dim (``_random_samples[n, c, d]``, ``d`` = W, H
for 2-D and T, H, W for 3-D, as torch), ``alpha = (in - k) / (out - 1)`` and

    start[i] = int((i + u) * alpha) - int(u * alpha)   for i < out - 1,   start[out - 1] = in - k

computed in the input's floating dtype (as torch's ``scalar_t``, so float32 rounds alike). Each
output is the maximum of the ``k``-sized window at those starts; its index is the flat position
in the input plane (``h * W + w``; ``t * H * W + h * W + w``), the first maximum winning ties
and a NaN winning over numbers (torch's ``val > max || isnan(val)``).

The indices are found on the host without gradient; the values are ``gather`` of the flattened
input at them, so the gradient (scatter-add to the chosen elements) and double backward are
``gather``'s. Without ``_random_samples`` the samples are drawn with ``torch.rand`` semantics
from shardflow's default generator (``manual_seed`` repeats them).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..autograd import Tensor
from ..backend import dtypes

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
# which column of _random_samples drives each spatial dim (torch: W, H for 2-D; T, H, W for 3-D)
_SAMPLE_COLUMN = {2: (1, 0), 3: (0, 1, 2)}


def _tuple(v, n: int, what: str):
    if isinstance(v, int | float):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError(f"fractional_max_pool{n}d: {what} must be one number or {n} numbers, got {v}")
    return v


def _starts(samples: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """(N, C) samples -> (N, C, out) window starts, in the samples' dtype as torch's scalar_t."""
    dt = samples.dtype if samples.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    u = samples.astype(dt)[..., None]  # (N, C, 1)
    starts = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dt.type(size - k) / dt.type(out - 1)
        i = np.arange(out - 1, dtype=dt)
        starts[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out > 0:
        starts[..., -1] = size - k
    return starts


def _indices(x: np.ndarray, samples: np.ndarray, kernel, out_size) -> np.ndarray:
    """(N, C, *out) flat in-plane indices of each window's first maximum (NaN wins)."""
    nd = len(kernel)
    spatial = x.shape[2:]
    n, c = x.shape[:2]
    plane = x.reshape(n, c, -1)
    strides = [int(np.prod(spatial[d + 1:])) for d in range(nd)]
    starts = [_starts(samples[:, :c, _SAMPLE_COLUMN[nd][d]], spatial[d], out_size[d], kernel[d]) for d in range(nd)]
    base = np.zeros((n, c) + tuple(out_size), dtype=np.int64)
    for d in range(nd):  # the window's first element, broadcast over the output grid
        shape = (n, c) + tuple(out_size[e] if e == d else 1 for e in range(nd))
        base = base + starts[d].reshape(shape) * strides[d]
    best_idx = base.copy()
    best = np.full(base.shape, -np.inf, dtype=x.dtype)
    for offset in np.ndindex(*kernel):  # row-major over the window, as torch's loops
        idx = base + sum(o * s for o, s in zip(offset, strides))
        val = np.take_along_axis(plane, idx.reshape(n, c, -1), axis=2).reshape(idx.shape)
        better = (val > best) | np.isnan(val)
        best = np.where(better, val, best)
        best_idx = np.where(better, idx, best_idx)
    return best_idx


def _fractional_max_pool(nd: int, input, kernel_size, output_size, output_ratio, _random_samples):
    op = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    x = input
    if x.ndim < nd + 1:  # torch reads input.size(-nd - 1) first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got "
                         f"{-nd - 1})")
    if output_size is None:
        # (torch's functional form takes len() of a bare float and fails; one number is taken here)
        if not isinstance(output_ratio, int | float) and len(output_ratio) > nd:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, nd, "output_ratio")
        output_size = [int(x.shape[-nd + d] * ratio[d]) for d in range(nd)]
    out_size = tuple(int(v) for v in _tuple(output_size, nd, "output_size"))
    kernel = tuple(int(v) for v in _tuple(kernel_size, nd, "kernel_size"))
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {tuple(x.shape)}")
    if _random_samples is None:
        n_batch = 1 if x.ndim == nd + 1 else x.shape[0]
        _random_samples = ops.rand(n_batch, x.shape[-nd - 1], nd, dtype=x.dtype, device=x.device)
    batched = x.ndim == nd + 2
    xb = x if batched else ops.unsqueeze(x, 0)  # (N, C, *spatial)
    samples = _random_samples
    if samples.requires_grad:  # torch's autograd kernel refuses it (the samples have no gradient)
        raise RuntimeError(f"The function 'fractional_max_pool{nd}d' is not differentiable with respect to "
                           "argument 'random_samples'. This input cannot have requires_grad True.")
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: {tuple(samples.shape)}")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    if samples.shape[0] < xb.shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != xb.shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    spatial = xb.shape[2:]
    prefix = f"{op}_out()" if nd == 3 else f"{op}()"
    for d, name in enumerate(_DIM_NAMES[nd]):
        # torch's bound: out + k - 1 <= in for 2-D, but < in for 3-D
        if out_size[d] + kernel[d] - 1 > spatial[d] - (nd == 3):
            raise RuntimeError(f"{prefix}: pool {name} {kernel[d]} too large relative to input {name} {spatial[d]}")
    n, c = xb.shape[:2]
    # the window search runs on the host (small, no gradient); the values are a gather on x's device
    idx = _indices(xb.detach().cpu().numpy(), samples.detach().cpu().numpy()[:n], kernel, out_size)
    index = ops.tensor(idx.reshape(n, c, -1), dtype=dtypes.int64, device=x.device)
    out = ops.reshape(ops.gather(ops.reshape(xb, (n, c, -1)), 2, index), (n, c) + out_size)
    indices = ops.reshape(index, (n, c) + out_size)
    if not batched:
        out, indices = ops.squeeze(out, 0), ops.squeeze(indices, 0)
    return out, indices


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """``(values, indices)`` of 2-D fractional max pooling over ``(N?, C, H, W)`` (module docstring)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """``(values, indices)`` of 3-D fractional max pooling over ``(N?, C, T, H, W)``."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """2-D fractional max pooling; ``(values, indices)`` when ``return_indices``."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                             _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """3-D fractional max pooling; ``(values, indices)`` when ``return_indices``."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                             _random_samples)
    return out if return_indices else out[0]
