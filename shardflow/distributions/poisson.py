"""``Poisson(rate)``: PyTorch's formulas. ``log_prob = xlogy(k, rate) - rate - lgamma(k + 1)``;
``mean = variance = rate``, ``mode = floor(rate)``; ``sample`` is ``torch.poisson``
(``ops/random_draws.py``). No ``rsample`` (discrete), as in PyTorch."""

from __future__ import annotations

from ..autograd import Size, no_grad
from ..ops import lgamma, poisson, xlogy
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, is_number

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if is_number(rate) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)
