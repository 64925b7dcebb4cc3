"""``torch.special``'s two-argument functions: ``xlog1py`` and ``zeta`` (broadcast, either
argument a Tensor or a Python number; the promoted floating dtype, ``special_common``).

* ``xlog1py(x, y) = x log1p(y)``, 0 where ``x == 0`` unless ``y`` is NaN (PyTorch's and
  SciPy's rule). Gradients (torch 2.13's): ``xlog1py(g, y)``, 0 where ``x == 0`` and
  ``y <= -1``; ``g x / (1 + y)``. Evaluated with the array module (NumPy or CuPy).
* ``zeta(x, q) = sum_k (k + q)^-x``, the Hurwitz zeta function: SciPy's ``zeta`` on the
  host, with ATen's values where the two differ (NaN for ``x = inf, q > 1`` and for
  ``q = inf``). The gradient in ``q`` is ``-x zeta(x + 1, q)``; in ``x`` PyTorch has none,
  and backward raises its error.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import OPS, register
from ..backend import get_array_module
from ._util import unbroadcast
from .special_common import (
    float_pair,
    meta_result,
    not_differentiable,
    on_host,
    scipy_special,
    write_out,
)

__all__: list[str] = []


def xlog1py_array(x, y):
    meta = meta_result(x, y)
    if meta is not None:
        return meta
    xp = get_array_module(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * xp.log1p(y)
        return xp.where((x == 0) & ~xp.isnan(y), 0.0, out).astype(x.dtype, copy=False)


class _Xlog1py(Function):
    save_inputs = (0, 1)

    def forward(self, x, y):
        self.x, self.y = x, y
        return xlog1py_array(x, y)

    def backward(self, g):
        xp = get_array_module(g)
        x, y = self.x, self.y
        gx = gy = None
        if self.needs_input_grad[0]:
            gx = xp.where((x == 0) & (y <= -1), 0.0, xlog1py_array(g, y)).astype(g.dtype, copy=False)
            gx = unbroadcast(gx, x.shape)
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                gy = unbroadcast((g * x / (1.0 + y)).astype(g.dtype, copy=False), y.shape)
        return gx, gy

    def backward_graph(self, g):
        from . import _grad_graph as _gg

        x_t, y_t = self.saved_input(0, self.x), self.saved_input(1, self.y)
        gx = gy = None
        if self.needs_input_grad[0]:
            gx = _gg.keep_where(_Xlog1py.apply(g, y_t), ~((self.x == 0) & (self.y <= -1)))
            gx = _gg.sum_to(gx, self.x.shape)
        if self.needs_input_grad[1]:
            gy = _gg.sum_to(g * x_t / (y_t + 1.0), self.y.shape)
        return gx, gy


@register("special_xlog1py")
def xlog1py(input, other, *, out=None) -> Tensor:
    """``torch.special.xlog1py(input, other)``: ``input * log1p(other)``, 0 where
    ``input == 0`` (unless ``other`` is NaN)."""
    x, y = float_pair(input, other)
    return write_out(_Xlog1py.apply(x, y), out, "special_xlog1py")


def zeta_array(x, q):
    """Hurwitz zeta on arrays of one dtype (host SciPy, ATen's NaNs where SciPy differs)."""
    def f(a, b):
        z = scipy_special().zeta(a, b)
        return np.where(((a == np.inf) & (b > 1)) | ((b == np.inf) & (a > 1)), np.nan, z)

    if meta_result(x, q) is None:
        x, q = get_array_module(x).broadcast_arrays(x, q)
    return on_host(f, x, q)


class _Zeta(Function):
    save_inputs = (0, 1)

    def forward(self, x, q):
        self.x, self.q = x, q
        return zeta_array(x, q)

    def backward(self, g):
        if self.needs_input_grad[0]:
            raise not_differentiable("zeta", "in its first argument (x) ")
        with np.errstate(all="ignore"):
            gq = g * -self.x * zeta_array(self.x + 1.0, self.q)
        return None, unbroadcast(gq.astype(g.dtype, copy=False), self.q.shape)

    def backward_graph(self, g):
        from . import _grad_graph as _gg

        if self.needs_input_grad[0]:
            raise not_differentiable("zeta", "in its first argument (x) ")
        x_t, q_t = self.saved_input(0, self.x), self.saved_input(1, self.q)
        return None, _gg.sum_to(g * -x_t * OPS["special_zeta"](x_t + 1.0, q_t), self.q.shape)


@register("special_zeta")
def zeta(input, other, *, out=None) -> Tensor:
    """``torch.special.zeta(input, other)``: the Hurwitz zeta function
    ``sum_k (k + other)^-input`` (Riemann's at ``other = 1``)."""
    x, q = float_pair(input, other)
    return write_out(_Zeta.apply(x, q), out, "special_zeta")
