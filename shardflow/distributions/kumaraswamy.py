"""``Kumaraswamy(concentration1, concentration0)`` (a, b): PyTorch's construction,
``U(0, 1)`` pushed through ``u -> (1 - u^(1/b))^(1/a)``; the n-th moment is
``b B(1 + n/a, b)``; the mode ``((a - 1) / (ab - 1))^(1/a)`` is NaN unless ``a, b >= 1``;
``entropy = (1 - 1/b) + (1 - 1/a) H_b - log(ab)`` with ``H_b = digamma(b + 1) + euler_gamma``."""

from __future__ import annotations

import math

from ..ops import digamma, exp, full_like, lgamma, log, where
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The n-th moment, ``b * B(1 + n/a, b)``."""
    arg1 = 1 + n / a
    return b * exp(lgamma(arg1) + lgamma(b) - lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(full_like(self.concentration0, 0), full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - log(self.concentration1) - log(self.concentration0)
