"""``Cauchy(loc, scale)``: PyTorch's formulas. ``rsample = loc + scale * eps`` with
``eps`` from ``Tensor.cauchy_()``;
``log_prob = -log(pi) - log(scale) - log1p(((x - loc) / scale)^2)``;
``cdf = atan((x - loc) / scale) / pi + 1/2``; ``entropy = log(4 pi scale)``; the mean is NaN
and the variance infinite."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import atan, empty, full, tan
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, is_number

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = Size() if is_number(loc) and is_number(scale) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
