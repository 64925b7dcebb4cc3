"""``Normal(loc, scale)``: PyTorch's formulas. ``rsample = loc + eps * scale`` with
``eps ~ N(0, 1)``; ``log_prob = -(x - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))``;
``cdf = (1 + erf((x - loc) / (scale sqrt 2))) / 2``; ``icdf = loc + scale sqrt(2) erfinv(2p - 1)``;
``entropy = 1/2 + log(2 pi)/2 + log(scale)``."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import erf, erfinv, log
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, is_number, standard_normal

__all__ = ["Normal"]


class Normal(ExponentialFamily):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = Size() if is_number(loc) and is_number(scale) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, ('loc', 'scale'))

    @property
    def mean(self):
        return self.loc

    mode = mean  # symmetric and unimodal: the mode is the mean

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if is_number(self.scale) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale)
