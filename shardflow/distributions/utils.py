"""Helpers of ``torch.distributions.utils`` with PyTorch's names: ``broadcast_all``,
``logits_to_probs``, ``probs_to_logits``, ``clamp_probs``, ``lazy_property``,
``tril_matrix_to_vec``, ``vec_to_tril_matrix``; plus ``finfo`` (the NumPy/ml_dtypes limits
of a shardflow dtype) and ``sum_rightmost``, used across the package."""

from __future__ import annotations

import functools
import numbers

import ml_dtypes
import numpy as np

from ..autograd import Size, Tensor, enable_grad
from ..backend import dtypes
from ..ops import arange, broadcast_tensors, empty, log, log1p, sigmoid, softmax, tensor

euler_constant = 0.57721566490153286060  # Euler-Mascheroni

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]


def finfo(dtype):
    """Machine limits (``eps``, ``tiny``, ``min``, ``max``) of a floating shardflow dtype."""
    d = dtypes.as_dtype(dtype)
    return ml_dtypes.finfo(d.np) if d is dtypes.bfloat16 else np.finfo(d.np)


def as_size(shape) -> Size:
    return shape if isinstance(shape, Size) else Size(tuple(int(s) for s in shape))


def is_number(v) -> bool:
    """PyTorch's ``_Number`` test (bool, int, float): a parameter given as a plain number
    makes a distribution with an empty batch shape."""
    return isinstance(v, bool | int | float)


def broadcast_all(*values):
    """Tensors broadcast to one shape; Python numbers become tensors of the first tensor's
    dtype and device (the default dtype when every value is a number)."""
    if not all(isinstance(v, Tensor) or isinstance(v, numbers.Number) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects "
            f"implementing __torch_function__; got {[type(v).__name__ for v in values]}"
        )
    if not all(isinstance(v, Tensor) for v in values):
        first = next((v for v in values if isinstance(v, Tensor)), None)
        opts = (dict(dtype=dtypes.get_default_dtype()) if first is None
                else dict(dtype=first.dtype, device=first.device))
        values = tuple(v if isinstance(v, Tensor) else tensor(v, **opts) for v in values)
    return broadcast_tensors(*values)


def standard_normal(shape, dtype, device) -> Tensor:
    return empty(tuple(shape), dtype=dtype, device=device).normal_()


def sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.ndim - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Log odds (binary) or unnormalised log probabilities over the last dim -> probabilities."""
    if is_binary:
        return sigmoid(logits)
    return softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities clamped into ``[eps, 1 - eps]`` of their dtype."""
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Probabilities -> logits (log odds when ``is_binary``), clamped away from 0 and 1."""
    ps = clamp_probs(probs)
    if is_binary:
        return log(ps) - log1p(-ps)
    return log(ps)


class lazy_property:
    """A property computed on first access (with gradients enabled) and then stored as an
    instance attribute, as PyTorch's ``lazy_property``."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n: int, diag: int):
    a = arange(n)
    return a < a.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower-triangular entries of (a batch of) ``D x D`` matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of :func:`tril_matrix_to_vec`."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > float(finfo(vec.dtype).eps):
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the "
            "lower triangular part of a square D x D matrix."
        )
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag)] = vec
    return mat
