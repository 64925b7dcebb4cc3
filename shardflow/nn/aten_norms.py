"""torch's aten-level normalisation primitives, as torch's top-level names: the ``native_*``
forms that return their saved statistics, ``norm_except_dim`` (weight norm's norm),
``native_dropout`` (output and mask) and ``native_norm``.

* ``native_layer_norm(input, normalized_shape, weight, bias, eps)`` -> ``(out, mean, rstd)``,
  statistics of shape ``input.shape[:-k] + (1,) * k``;
* ``native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
  eps)`` -> ``(out, save_mean, save_invstd)`` (``(C,)`` when training, empty in evaluation,
  as torch); running stats update in place as in ``F.batch_norm``;
* ``native_group_norm(input, weight, bias, N, C, HxW, group, eps)`` -> ``(out, mean, rstd)``
  of shape ``(N, group)``.

``out`` is ``F.layer_norm``/``batch_norm``/``group_norm``'s (so differentiable); the
statistics are not (torch gives them no gradient either). ``native_norm`` is
``linalg.vector_norm`` (torch 2.13 runs it only on sparse CPU tensors and raises
NotImplementedError for a dense one; shardflow computes it).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, no_grad
from ..ops import bernoulli, empty, ones_like
from ..ops._linalg_names import vector_norm
from . import functional as F

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm", "native_dropout", "native_norm",
           "norm_except_dim"]


def _mean_rstd(x: Tensor, axes, eps: float):
    """Biased mean and ``1/sqrt(var + eps)`` over ``axes``, kept as size-1 dims, in the input's
    dtype (float32 math for half inputs), without autograd."""
    a = x.detach().numpy()
    wide = a.astype(np.float64 if a.dtype == np.float64 else np.float32)
    mean = wide.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(wide.var(axis=axes, keepdims=True) + eps)
    out_dtype = np.float32 if a.dtype != np.float64 else np.float64
    return Tensor(mean.astype(out_dtype)), Tensor(rstd.astype(out_dtype))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``torch.native_layer_norm``: ``(layer_norm(...), mean, rstd)``."""
    k = len(normalized_shape)
    out = F.layer_norm(input, tuple(normalized_shape), weight, bias, eps)
    mean, rstd = _mean_rstd(input, tuple(range(input.ndim - k, input.ndim)), eps)
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``torch.native_batch_norm``: ``(batch_norm(...), save_mean, save_invstd)``."""
    axes = (0, *range(2, input.ndim))
    if training:
        mean, rstd = _mean_rstd(input, axes, eps)
        mean, rstd = mean.reshape(-1), rstd.reshape(-1)
    else:
        mean = rstd = empty(0, dtype=input.dtype)
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``torch.native_group_norm``: ``(group_norm(...), mean, rstd)`` with ``(N, group)``
    statistics; ``N``, ``C``, ``HxW`` must describe ``input``."""
    if (input.shape[0], input.shape[1] if input.ndim > 1 else 1, input.numel() // max(N * C, 1)) != (N, C, HxW):
        raise RuntimeError(f"native_group_norm: expected input of N={N}, C={C}, HxW={HxW}, got shape "
                           f"{list(input.shape)}; pass N, C and the product of the spatial sizes")
    out = F.group_norm(input, group, weight, bias, eps)
    mean, rstd = _mean_rstd(input.detach().reshape(N, group, -1), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_dropout(input, p, train):
    """``torch.native_dropout``: ``(output, mask)``; ``mask`` is a bool tensor of the kept
    elements, ``output = input * mask / (1 - p)``. ``train`` False or None with ``p`` 0:
    the input (a new tensor) and an all-True mask, as torch."""
    if train is False or (train is None and p == 0):
        return input.clone(), ones_like(input, dtype=bool)
    if p == 1:
        mask = ones_like(input, dtype=bool).logical_not()
        return input * mask, mask
    with no_grad():
        mask = bernoulli(ones_like(input, dtype=input.dtype if input.is_floating_point() else None) * (1 - p)).bool()
    return input * mask * (1.0 / (1 - p)), mask


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """``torch.native_norm(self, p=2)`` / ``(self, p, dim, keepdim, dtype)``: the vector
    ``p``-norm (``linalg.vector_norm``)."""
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def norm_except_dim(v, pow=2, dim=0):
    """``torch.norm_except_dim``: the ``pow``-norm over every dim but ``dim``, kept as size-1
    dims (weight norm's ``g``); ``dim=-1``: the norm of all of ``v`` (0-d)."""
    if dim == -1:
        return vector_norm(v, pow)
    dim = dim % v.ndim
    axes = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, axes, keepdim=True)
