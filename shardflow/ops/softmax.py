"""The softmax family: ``softmax`` and ``log_softmax``, each one fused ``Function`` with a
hand-written backward (``cross_entropy`` in ``loss.py`` never builds the ``log_softmax`` array).

* ``softmax``: ``y = exp(x - max) / sum(exp(x - max))``; backward ``gx = y * (g - sum(g*y))``.
* ``log_softmax``: ``y = (x - max) - log(sum(exp(x - max)))``; backward
  ``gx = g - exp(y) * sum(g)``.

Reduced over the last dim of a contiguous float32/float64 array, both run as one Numba pass
per row (``kernels/softmax.py``); otherwise as NumPy passes. float16/bfloat16 inputs are
computed in float32 and cast back; their backward, as PyTorch's, reads the output as it was
returned (rounded to the 2-byte dtype) and computes in float32 (with the unrounded float32
probabilities a third of bfloat16 input gradients were an ulp off torch's).
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import as_dtype
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..kernels import softmax as _sm_kernels
from ._util import _down, _up, flush_subnormal_, not_a_tensor, refuse_complex, wrap_dim

__all__ = ["softmax", "log_softmax"]


class Softmax(Function):
    save_inputs = ()
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        xa, dt = _up(x)
        self.dt = dt
        self.fused = _last_dim_fused(xa, dim)
        if self.fused:  # one Numba pass per row (shardflow/kernels/softmax.py)
            self.y = _sm_kernels.softmax_forward(xa.reshape(-1, xa.shape[-1])).reshape(xa.shape)
            return _down(self.y, dt)
        if xa.size == 0:  # nothing to normalise (NumPy's max has no identity)
            self.y = xa.copy()
            return _down(self.y, dt)
        y = xa - xa.max(axis=dim, keepdims=True)
        if isinstance(y, np.generic):  # a 0-d NumPy input gives a scalar; other backends keep their arrays
            y = np.asarray(y)
        np.exp(y, out=y)
        y /= y.sum(axis=dim, keepdims=True)
        flush_subnormal_(y)  # a probability under 1.2e-38 would slow every GEMM it enters
        self.y = y  # float32 even for half inputs: backward reuses it
        return _down(y, dt)

    def backward(self, g):
        out_dtype = g.dtype
        y, g = _as_returned(self, g)
        if self.fused:
            return _fused_softmax_backward(g, y, log=False).astype(out_dtype, copy=False)
        if self.dim is not None and self.dim == y.ndim - 1 and g.dtype == y.dtype:
            s = np.einsum("...i,...i->...", g, y)[..., None]  # sum(g * y) without a temporary
        else:
            s = (g * y).sum(axis=self.dim, keepdims=True)
        gx = g - s
        gx *= y
        return flush_subnormal_(gx).astype(out_dtype, copy=False)

    def backward_graph(self, g):
        y = self.saved_output(0, self.y.astype(g.array.dtype, copy=False))
        return y * (g - (g * y).sum(dim=self.dim, keepdim=True))


class LogSoftmax(Function):
    save_inputs = ()
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        xa, dt = _up(x)
        self.dt = dt
        # float16/bfloat16 over the last dim: PyTorch's kernel keeps log(sum(exp)) in the
        # input's dtype (its per-row buffer is scalar_t) and subtracts it in float32; rounding
        # it here as well took the outputs an ulp off torch's from 25% to the rows whose sum
        # lies on a rounding boundary (its float32 exp and summation order)
        half_last = dt is not None and dim is not None and dim == xa.ndim - 1
        self.fused = _last_dim_fused(xa, dim) and not half_last
        if self.fused:
            self.y = _sm_kernels.softmax_forward(xa.reshape(-1, xa.shape[-1]), log=True).reshape(xa.shape)
            return _down(self.y, dt)
        if xa.size == 0:  # nothing to normalise (NumPy's max has no identity)
            self.y = xa.copy()
            return _down(self.y, dt)
        y = xa - xa.max(axis=dim, keepdims=True)
        lse = np.log(np.exp(y).sum(axis=dim, keepdims=True))
        if half_last:
            lse = lse.astype(dt).astype(lse.dtype)
        y -= lse
        self.y = y
        return _down(y, dt)

    def backward(self, g):
        out_dtype = g.dtype
        y, g = _as_returned(self, g)
        if self.fused:
            return _fused_softmax_backward(g, y, log=True).astype(out_dtype, copy=False)
        p = np.exp(y)
        p *= g.sum(axis=self.dim, keepdims=True)
        gx = g - p
        return flush_subnormal_(gx).astype(out_dtype, copy=False)

    def backward_graph(self, g):
        y = self.saved_output(0, self.y.astype(g.array.dtype, copy=False))
        return g - y.exp() * g.sum(dim=self.dim, keepdim=True)


def _as_returned(fn, g):
    """``(y, g)`` for a backward. After a float16/bfloat16 forward: the float32 output
    rounded as it was returned (PyTorch's backward reads the returned output) and ``g`` in
    float32, the opmath of PyTorch's half-precision kernel; otherwise as they are."""
    if fn.dt is None:
        return fn.y, g
    return fn.y.astype(fn.dt).astype(np.float32), g.astype(np.float32)


def _last_dim_fused(xa, dim) -> bool:
    """Whether the softmax kernels take this input: reduced over the last dim of a non-empty
    C-contiguous NumPy float32/float64 array (``kernels.usable``)."""
    return dim is not None and dim == xa.ndim - 1 and xa.size > 0 and kernels.usable(xa)


def _fused_softmax_backward(g, y, log):
    N = y.shape[-1]
    g2 = np.ascontiguousarray(g, dtype=y.dtype).reshape(-1, N)
    gx = _sm_kernels.softmax_backward(g2, y.reshape(-1, N), log=log).reshape(y.shape)
    return gx.astype(g.dtype, copy=False)


_EMPTY_INTEGER = object()  # _softmax_args' answer for an empty integer input: returned as it is


def _softmax_args(input, dim, _stacklevel, dtype, name):
    if not isinstance(input, Tensor):
        raise not_a_tensor(f"{name}: input must be a Tensor", input)
    if dtype is None and _stacklevel is not None and not isinstance(_stacklevel, int):
        dtype = _stacklevel  # torch.softmax(x, dim, dtype) passes dtype third
    if dtype is not None:
        from .conversion import to_dtype

        input = to_dtype(input, as_dtype(dtype))
    nd = input.array.ndim
    d = dim if dim is not None else (0 if nd in (0, 1, 3) else 1)
    last = nd == 0 or wrap_dim(d, nd) == nd - 1  # torch's kernel names: the last dim's own
    kernel = f"{name}{'_lastdim' if last else ''}_kernel_impl"
    refuse_complex(input, kernel=kernel)
    if dtype is None and not input.dtype.is_floating_point:
        # torch has no integer/bool kernel: it refuses, except on an empty tensor, which it
        # returns in its own dtype (no kernel runs). A float result here was a silent change.
        if input.array.size == 0:
            return input, _EMPTY_INTEGER
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_SCALAR_TYPE_NAMES[input.dtype.name]}'; pass "
            f"dtype=torch.float32 (or convert the input with .float()) for a floating result")
    if dim is None:  # PyTorch's legacy implicit choice
        dim = 0 if nd in (0, 1, 3) else 1
    axis = wrap_dim(dim, nd) if nd else None
    return input, axis


@register("softmax")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (fused, numerically stable)."""
    input, axis = _softmax_args(input, dim, _stacklevel, dtype, "softmax")
    if axis is _EMPTY_INTEGER:
        return input.clone()
    return Softmax.apply(input, dim=axis)


@register("log_softmax")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``(x - max) - log(sum(exp(x - max)))`` along ``dim`` (fused, numerically stable)."""
    input, axis = _softmax_args(input, dim, _stacklevel, dtype, "log_softmax")
    if axis is _EMPTY_INTEGER:
        return input.clone()
    return LogSoftmax.apply(input, dim=axis)
