"""Reductions: sum, mean (more in this family: max/min, argmax, var/std, logsumexp, ...)."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import as_dtype
from ._util import norm_dims

__all__ = ["sum", "mean"]


def _expand_grad(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input ``shape``."""
    if dims is None:
        return np.broadcast_to(g.reshape((1,) * len(shape)), shape) if g.ndim == 0 or len(shape) else g
    if not keepdim:
        g = np.expand_dims(g, dims)
    return np.broadcast_to(g, shape)


class Sum(Function):
    save_inputs = ()

    def forward(self, a, dims=None, keepdim=False, dtype=None):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        return np.asarray(a.sum(axis=dims, keepdims=keepdim, dtype=dtype))

    def backward(self, g):
        return _expand_grad(g, self.shape, self.dims, self.keepdim)


class Mean(Function):
    save_inputs = ()

    def forward(self, a, dims=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        n = a.size if dims is None else int(np.prod([a.shape[d] for d in dims]))
        self.n = n
        return np.asarray(a.mean(axis=dims, keepdims=keepdim), dtype=a.dtype)

    def backward(self, g):
        return _expand_grad(g / self.n, self.shape, self.dims, self.keepdim).astype(g.dtype, copy=False)


@register("sum")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dims = norm_dims(dim, input.array.ndim)
    if dtype is not None:
        dtype = as_dtype(dtype).np
    elif input.array.dtype.kind in "biu":
        dtype = np.int64  # PyTorch sums integers and bools as int64
    return Sum.apply(input, dims=dims, keepdim=keepdim, dtype=dtype)


@register("mean")
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be floating point, got "
            f"{input.dtype}; call .float() first or pass dtype=shardflow.float32"
        )
    return Mean.apply(input, dims=norm_dims(dim, input.array.ndim), keepdim=keepdim)



