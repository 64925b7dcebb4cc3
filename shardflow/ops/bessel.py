"""Modified Bessel functions of the first kind: ``i0`` (``torch.i0`` / ``special.i0``,
``Tensor.i0(_)``) and ``special.i1``, float64 on the host then cast back.

``I0`` is NumPy's ``i0`` (Cephes' Chebyshev expansions, the ones ATen uses). ``I1`` is its
power series ``sum_k (x/2)^(2k+1) / (k! (k+1)!)`` for ``|x| <= 20`` (positive terms, 80 of
them) and the asymptotic expansion ``e^x / sqrt(2 pi x) sum_k (-1)^k prod_j (4 - (2j-1)^2) /
(k! (8x)^k)`` (30 terms) above; ``I1`` is odd. Non-finite inputs give NaN, as ATen's.
Gradients: ``I0' = I1``, ``I1' = I0 - I1 / x`` (``1/2`` at 0), both also as
``backward_graph`` (written with ``I0`` and ``I1`` again), so every order differentiates."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import OPS, register
from ..backend import CPU, device_of, to_device
from ..backend.meta import MetaArray
from ._util import as_tensor_arg, float_dtype_of, inplace
from .conversion import to_dtype

__all__ = ["i0", "i0_"]


def _host64(a) -> np.ndarray:
    if isinstance(a, MetaArray):
        return MetaArray(a.shape, np.float64)
    return np.asarray(to_device(a, CPU), dtype=np.float64)


def _like(values, like):
    if isinstance(values, MetaArray):  # meta input: the shape only
        return MetaArray(values.shape, like.dtype)
    values = values.astype(like.dtype)
    return values if isinstance(like, np.ndarray) else to_device(values, device_of(like))


def i0_array(x: np.ndarray) -> np.ndarray:
    if isinstance(x, MetaArray):
        return x
    with np.errstate(all="ignore"):
        out = np.i0(x)
    return np.where(np.isfinite(x), out, np.nan)


def i1_array(x: np.ndarray) -> np.ndarray:
    if isinstance(x, MetaArray):
        return x
    ax = np.abs(x)
    out = np.empty_like(ax)
    with np.errstate(all="ignore"):
        small = ax <= 20.0
        if small.any():
            h = ax[small] / 2
            term = h.copy()
            total = term.copy()
            h2 = h * h
            for k in range(80):
                term = term * h2 / ((k + 1) * (k + 2))
                total = total + term
            out[small] = total
        big = ~small
        if big.any():
            z = ax[big]
            coef = np.ones_like(z)
            total = coef.copy()
            for k in range(1, 31):
                coef = coef * -(4.0 - (2 * k - 1) ** 2) / (k * 8.0 * z)  # (-1)^k a_k / z^k
                total = total + coef
            out[big] = np.exp(z) / np.sqrt(2 * np.pi * z) * total
    out = np.where(x < 0, -out, out)
    return np.where(np.isfinite(x), out, np.nan)


class _I0(Function):
    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        return _like(i0_array(_host64(x)), x)

    def backward(self, g):
        return g * _like(i1_array(_host64(self.x)), g)

    def backward_graph(self, g):  # I0' = I1, itself differentiable: any order
        return g * _I1.apply(self.saved_input(0))


class _I1(Function):
    save_inputs = (0,)

    def forward(self, x):
        self.x = x
        return _like(i1_array(_host64(x)), x)

    def backward(self, g):
        x = _host64(self.x)
        with np.errstate(all="ignore"):
            d = np.where(x == 0, 0.5, i0_array(x) - i1_array(x) / x)
        return g * _like(d, g)

    def backward_graph(self, g):
        """``I1' = I0 - I1 / x`` with Tensors (``1/2`` at 0, where ``x`` is replaced by 1
        inside the quotient so that no NaN reaches a later derivative)."""
        x = self.saved_input(0)
        at_zero = Tensor(self.x == 0)
        safe = OPS["where"](at_zero, 1.0, x)
        return g * OPS["where"](at_zero, 0.5, _I0.apply(x) - _I1.apply(x) / safe)


def _float(input) -> Tensor:
    t = as_tensor_arg(input)
    return t if t.array.dtype.kind in "fV" else to_dtype(t, float_dtype_of(t))


@register("i0", "special_i0")
def i0(input) -> Tensor:
    """``torch.i0``: the modified Bessel function of the first kind, order 0."""
    return _I0.apply(_float(input))


@register("special_i1")
def special_i1(input) -> Tensor:
    """``torch.special.i1``: the modified Bessel function of the first kind, order 1."""
    return _I1.apply(_float(input))


@register("i0_")
def i0_(input) -> Tensor:
    return inplace(input, i0(input))
