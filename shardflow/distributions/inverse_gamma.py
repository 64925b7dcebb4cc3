"""``InverseGamma(concentration, rate)``: ``1 / Gamma(concentration, rate)`` (PyTorch's
``PowerTransform(-1)`` of a Gamma, so ``rsample`` carries Gamma's implicit gradient);
``mean = rate / (a - 1)`` (inf for ``a <= 1``), ``variance = rate^2 / ((a - 1)^2 (a - 2))``
(inf for ``a <= 2``), ``mode = rate / (a + 1)``,
``entropy = a + log(rate) + lgamma(a) - (1 + a) digamma(a)``."""

from __future__ import annotations

import math

from ..ops import where
from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return where(self.concentration > 1, result, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return where(self.concentration > 2, result, math.inf)

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()
