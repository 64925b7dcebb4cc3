"""Dropout family: ``dropout``, ``dropout1d/2d/3d`` (whole channels), ``alpha_dropout`` and
``feature_alpha_dropout``, each one ``Function`` that multiplies by a saved mask.

The keep mask is torch's: ``bernoulli_(1 - p)`` on torch's stream (``backend/random_stream.py``:
kept where a 53-bit uniform is below ``1 - p``), from the default generator or ``generator=``,
so after the same ``manual_seed`` the same elements are dropped as in torch, and restoring the
RNG state replays it (activation-checkpoint recomputation relies on this). Kept elements are
scaled by ``1 / (1 - p)`` computed in the input's dtype (torch's ``noise.div_(1 - p)``);
backward multiplies the gradient by the same scaled mask. With ``training=False`` or
``p = 0`` the input is returned unchanged and nothing is drawn, as in PyTorch.

Element-wise ``dropout`` on a C-contiguous float32/float64 NumPy array runs as
``FusedDropout`` (``kernels/dropout.py``): the same uniform draws, mask and output in one pass,
a 1-byte mask kept for backward; bit-identical to the NumPy path, which the rest keep.

``alpha_dropout`` (for SELU networks) keeps mean and variance:
``y = x * a * keep + b`` with ``a = ((1 - p) (1 + p alpha'^2))^-1/2`` and
``b = a alpha' (keep - 1 + p)`` — PyTorch's formula, alpha' = 1.7580993408473766.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import device_of, get_array_module, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..kernels import dropout as _dropout_kernels
from ._grad_graph import const
from ._util import inplace as _inplace
from ._util import refuse_complex

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA = 1.7580993408473766


class MaskMul(Function):
    """``y = x * mask (+ shift)``; backward ``g * mask`` (reduced when the mask broadcasts)."""

    save_inputs = ()

    def forward(self, x, mask=None, shift=None):
        self.mask = mask
        y = x * mask
        if shift is not None:
            y += shift
        return y.astype(x.dtype, copy=False)

    def backward(self, g):
        gx = g * self.mask
        return gx.astype(g.dtype, copy=False)

    def backward_graph(self, g):
        return g * const(self.mask.astype(g.array.dtype, copy=False))


class FusedDropout(Function):
    """Element-wise dropout by the Numba kernel (``kernels/dropout.py``): the same uniform
    draws and values as ``MaskMul`` with the NumPy mask, one pass each way, a 1-byte mask."""

    save_inputs = ()
    fused = True

    def forward(self, x, u=None, p=0.5):
        y, self.keep = _dropout_kernels.dropout_forward(x, u, p)
        self.p = p
        return y

    def backward(self, g):
        if not kernels.usable(g):
            g = np.ascontiguousarray(g)
        return _dropout_kernels.dropout_backward(g, self.keep, self.p)

    def backward_graph(self, g):
        mask = self.keep.astype(g.array.dtype)
        mask *= _scale(g.array.dtype, self.p)
        return g * const(mask)


def _check(p, name):
    if not isinstance(p, int | float) or p < 0.0 or p > 1.0:
        raise ValueError(f"{name} probability has to be between 0 and 1, but got {p}")


def _keep(x_array, shape, p, generator):
    """A bool keep mask of ``shape``: torch's ``empty(shape).bernoulli_(1 - p)``, on
    ``x_array``'s device."""
    draws = _stream.bernoulli(_random.get(generator), int(np.prod(shape, dtype=np.int64)), 1.0 - p)
    if tuple(shape) == x_array.shape and isinstance(x_array, np.ndarray):
        keep = _stream.like(x_array, np.bool_)  # torch's empty_like(input): a transposed input's
        _stream.fill(keep, draws)  # mask (MHA's batch_first output) is drawn in memory order
    else:
        keep = draws.reshape(shape)
    dev = device_of(x_array)
    return keep if dev.type == "cpu" else to_device(keep, dev)


def _scale(dt, p):
    """``1 / (1 - p)`` as torch's ``noise.div_(1 - p)`` computes it: in the noise's dtype."""
    return dt.type(1) / dt.type(1.0 - p)


def _finish(input, out, inplace):
    return _inplace(input, out) if inplace else out


def _dropout(input, p, training, inplace, shape_fn, name, generator=None):
    _check(p, name)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if not training or p == 0.0 or input.array.size == 0:
        return input
    refuse_complex(input, kernel="bernoulli_scalar_cpu_")  # torch's mask draw has no complex form
    xa = input.array
    dt = xa.dtype
    if p == 1.0:
        mask = get_array_module(xa).zeros(shape_fn(xa.shape), dtype=dt)
    elif name == "dropout" and kernels.usable(xa):
        # the same draws as _keep (53-bit uniforms, kept where < 1 - p), then one fused pass
        u = _stream.uniform53(_random.get(generator).mt, xa.size)
        return _finish(input, FusedDropout.apply(input, u=u, p=float(p)), inplace)
    else:
        keep = _keep(xa, shape_fn(xa.shape), p, generator)
        mask = keep.astype(dt)
        mask *= _scale(dt, p)
    return _finish(input, MaskMul.apply(input, mask=mask), inplace)


@register("dropout")
def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """Zero each element with probability ``p``, scale the rest by ``1 / (1 - p)``."""
    return _dropout(input, p, training, inplace, lambda s: s, "dropout", generator)


def _feature_shape(batched_ndim, name, allow_3d_batched=False):
    def shape_fn(s):
        if len(s) == batched_ndim or (allow_3d_batched and len(s) == 3):
            return s[:2] + (1,) * (len(s) - 2)  # (N, C, 1, ...)
        if len(s) == batched_ndim - 1:
            return s[:1] + (1,) * (len(s) - 1)  # unbatched (C, 1, ...)
        raise ValueError(
            f"{name}: expected a {batched_ndim - 1}D (unbatched) or {batched_ndim}D (batched) input, "
            f"got shape {tuple(s)}"
        )

    return shape_fn


@register("dropout1d")
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    return _dropout(input, p, training, inplace, _feature_shape(3, "dropout1d"), "dropout1d")


def _warn_unusual_rank(name, ndim, expected, spatial):
    """PyTorch warns (and runs) when dropout2d/3d get a rank they were not meant for."""
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an "
        f"error in a future release. To retain the behavior and silence this warning, please use "
        f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs "
        f"with {spatial} spatial dimensions, a channel dimension, and an optional batch "
        f"dimension (i.e. {expected[0]}D or {expected[1]}D inputs).",
        stacklevel=5,  # past dropout2d/3d, the dispatcher and F.dropout2d: the line that called F
    )


def _feature_dropout_shape(s):
    """PyTorch's ``feature_dropout`` noise shape: one draw per (dim 0, dim 1) pair."""
    if len(s) < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got "
                           f"shape {tuple(s)}; use dropout for element-wise dropout")
    return s[:2] + (1,) * (len(s) - 2)


@register("dropout2d")
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability ``p``.

    PyTorch's rank rules: any input of rank >= 2 is treated as (N, C, *) with one draw per
    (n, c) — so 3D input is (N, C, L) (with PyTorch's warning that this will change) and 2D
    input is (N, C), i.e. element-wise dropout (with PyTorch's deprecation warning); rank < 2
    raises, as ``feature_dropout`` does."""
    ndim = input.ndim if isinstance(input, Tensor) else -1
    if ndim not in (3, 4, -1):
        _warn_unusual_rank("dropout2d", ndim, (3, 4), 2)
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=4,  # past the dispatcher and F.dropout2d: the line that called F.dropout2d
        )
    return _dropout(input, p, training, inplace, _feature_dropout_shape, "dropout2d")


@register("dropout3d")
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``.

    As in PyTorch, any other rank warns and is treated as unbatched: the channel is dim 0
    (a 1-D input is dropped element-wise)."""
    ndim = input.ndim if isinstance(input, Tensor) else -1
    if ndim not in (4, 5, -1):
        _warn_unusual_rank("dropout3d", ndim, (4, 5), 3)

    def shape_fn(s):
        if len(s) == 5:
            return s[:2] + (1, 1, 1)
        return _feature_dropout_shape((1,) + tuple(s))[1:]  # unsqueeze(0), feature noise, squeeze

    return _dropout(input, p, training, inplace, shape_fn, "dropout3d")


def _alpha(input, p, training, inplace, shape_fn, name):
    _check(p, name)
    if not training or p == 0.0 or input.array.size == 0:
        return input
    xa = input.array
    dt = xa.dtype
    if p == 1.0:
        return _finish(input, MaskMul.apply(input, mask=get_array_module(xa).zeros((), dtype=dt)), inplace)
    a = 1.0 / np.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1.0) * (1.0 - p))
    keep = _keep(xa, shape_fn(xa.shape), p, None).astype(dt)
    shift = (keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    mask = keep * dt.type(a)
    return _finish(input, MaskMul.apply(input, mask=mask, shift=shift.astype(dt, copy=False)), inplace)


@register("alpha_dropout")
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU activations that keeps the mean and variance of the input."""
    return _alpha(input, p, training, inplace, lambda s: s, "alpha_dropout")


@register("feature_alpha_dropout")
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` dropping whole channels (dim 1) at once."""
    return _alpha(input, p, training, inplace, lambda s: s[:2] + (1,) * (len(s) - 2), "feature_alpha_dropout")
