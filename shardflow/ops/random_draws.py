"""The samplers behind ``torch.distributions`` that are ops in PyTorch: ``poisson(rates)``,
``binomial(count, prob)`` (one draw per element; as in PyTorch the output keeps a graph to
its inputs: ``poisson``'s gradient is zero, ``binomial``'s backward raises PyTorch's error) and the in-place fills
``Tensor.cauchy_(median, sigma)``, ``Tensor.geometric_(p)``, ``Tensor.log_normal_(mean, std)``
with PyTorch's argument checks and messages.

All are torch's CPU samplers on torch's stream (``backend/random_stream.py``: the same numbers
as torch after the same ``manual_seed``), made on the host and cast to the tensor's dtype."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import CPU, device_of, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..backend.meta import is_meta_array
from ._util import as_tensor_arg
from .creation import _fill_random

__all__ = ["poisson", "binomial"]


def _host64(a) -> np.ndarray:
    return np.asarray(to_device(a, CPU), dtype=np.float64)


def _on_device_of(values: np.ndarray, like):
    values = values.astype(like.dtype)
    return values if isinstance(like, np.ndarray) else to_device(values, device_of(like))


class _Poisson(Function):
    """One Poisson(rate) draw per element; zero gradient (PyTorch's derivative)."""

    def forward(self, rates, generator=None):
        r = _host64(rates)
        if np.any(r < 0) or np.any(np.isnan(r)):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        return _on_device_of(_stream.poisson(_random.get(generator), r), rates)

    def backward(self, g):
        return g * 0


class _Binomial(Function):
    """One Binomial(count, prob) draw per element (``count`` and ``prob`` of one shape)."""

    def forward(self, count, prob, generator=None):
        draws = _stream.binomial(_random.get(generator), to_device(count, CPU), to_device(prob, CPU))
        return _on_device_of(draws, prob)

    def backward(self, g):
        raise RuntimeError("derivative for aten::binomial is not implemented")


# ATen's scalar type names, which its "not implemented for" messages print
_ATEN_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool"}


def _floating(t: Tensor, op: str) -> Tensor:
    if t.array.dtype.kind not in "fV":  # V: bfloat16 (ml_dtypes)
        name = str(t.dtype).split(".")[-1]
        raise NotImplementedError(f'"{op}" not implemented for \'{_ATEN_NAMES.get(name, name)}\'')
    return t


@register("poisson")
def poisson(input, generator=None) -> Tensor:
    """``torch.poisson(rates)``: a Poisson draw with each element's rate."""
    return _Poisson.apply(_floating(as_tensor_arg(input), "poisson_cpu"), generator=generator)


@register("binomial")
def binomial(count, prob, generator=None) -> Tensor:
    """``torch.binomial(count, prob)``: a Binomial draw per element (shapes must match)."""
    count, prob = as_tensor_arg(count), as_tensor_arg(prob)
    if tuple(count.shape) != tuple(prob.shape):
        raise RuntimeError(f"binomial: count and prob must have the same shape, got {tuple(count.shape)} "
                           f"and {tuple(prob.shape)}")
    return _Binomial.apply(_floating(count, "binomial_cpu"), _floating(prob, "binomial_cpu"), generator=generator)


@register("cauchy_")
def cauchy_(t: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill ``t`` with Cauchy(median, sigma) draws."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, _stream.cauchy(_random.get(generator), t.array.size, median, sigma))


@register("geometric_")
def geometric_(t: Tensor, p, *, generator=None) -> Tensor:
    """Fill ``t`` with Geometric(p) draws: the number of trials up to the first success (>= 1)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, _stream.geometric(_random.get(generator), t.array.size, p))


@register("log_normal_")
def log_normal_(t: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill ``t`` with ``exp(N(mean, std))`` draws."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, _stream.log_normal(_random.get(generator), t.array.size, mean, std))
