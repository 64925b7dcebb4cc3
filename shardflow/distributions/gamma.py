"""``Gamma(concentration, rate)``: PyTorch's formulas. ``rsample = standard_gamma(alpha) /
rate`` with the implicit reparameterisation gradient of ``ops/gamma_sampling.py``;
``log_prob = xlogy(alpha, rate) + xlogy(alpha - 1, x) - rate x - lgamma(alpha)``;
``entropy = alpha - log(rate) + lgamma(alpha) + (1 - alpha) digamma(alpha)``;
``cdf = gammainc(alpha, rate x)`` (``ops/incomplete_gamma.py``; differentiable in ``x`` and
``rate``, not in ``alpha``, as PyTorch)."""

from __future__ import annotations

from ..autograd import Size, Tensor
from ..ops import digamma, igamma, lgamma, log, xlogy
from ..ops.gamma_sampling import _standard_gamma
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, finfo, is_number

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = Size() if is_number(concentration) and is_number(rate) else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ('concentration', 'rate'))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=float(finfo(value.dtype).tiny))
        return value

    def log_prob(self, value):
        if not isinstance(value, Tensor):
            value = Tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - log(self.rate) + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)
