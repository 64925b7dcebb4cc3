"""``Gumbel(loc, scale)``: PyTorch's construction, ``U(tiny, 1 - eps)`` pushed through
``x -> loc - scale log(-log u)``; ``log_prob = z - exp(z) - log(scale)`` with
``z = (loc - x) / scale``; ``mean = loc + scale * euler_gamma``; ``entropy = log(scale) + 1 +
euler_gamma``."""

from __future__ import annotations

import math

from ..ops import full_like, ones_like
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant, finfo, is_number

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        f = finfo(self.loc.dtype)
        tiny, top = float(f.tiny), 1 - float(f.eps)
        if is_number(loc) and is_number(scale):
            base_dist = Uniform(tiny, top, validate_args=validate_args)
        else:
            base_dist = Uniform(full_like(self.loc, tiny), full_like(self.loc, top), validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - y.exp() - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
