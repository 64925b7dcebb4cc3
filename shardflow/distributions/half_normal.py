"""``HalfNormal(scale)``, and ``_HalfBase``, which HalfCauchy shares: ``|X|`` for
``X ~ Normal(0, scale)`` / ``Cauchy(0, scale)`` (a ``TransformedDistribution`` through ``AbsTransform``), PyTorch's
formulas: ``log_prob = base.log_prob(x) + log 2`` on ``x >= 0`` (``-inf`` below),
``cdf = 2 base.cdf(x) - 1``, ``icdf(p) = base.icdf((p + 1) / 2)``,
``entropy = base.entropy() - log 2``."""

from __future__ import annotations

import math

from ..autograd import Tensor
from ..ops import tensor, where, zeros_like
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class _HalfBase(TransformedDistribution):
    """The folded ``base_dist`` shared by HalfNormal and HalfCauchy."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        if not isinstance(value, Tensor):
            value = tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_HalfBase):
    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
