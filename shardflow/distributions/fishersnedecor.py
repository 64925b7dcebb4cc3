"""``FisherSnedecor(df1, df2)``: PyTorch's formulas. ``rsample = X1 / X2`` with
``Xi ~ Gamma(dfi / 2, dfi)`` (each a chi-square over its df; reparameterised through Gamma's
implicit gradient), clamped at the dtype's tiny; ``log_prob = lgamma((d1+d2)/2) - lgamma(d1/2)
- lgamma(d2/2) + d1/2 log(d1/d2) + (d1/2 - 1) log x - (d1+d2)/2 log1p(d1 x / d2)``; the
mean is NaN for ``df2 <= 2``, the variance for ``df2 <= 4``, the mode for ``df1 <= 2``."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import log, log1p, where
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import as_size, broadcast_all, finfo, is_number

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = Size() if is_number(df1) and is_number(df2) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = as_size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return self._init_expanded(FisherSnedecor, new, batch_shape)

    @property
    def mean(self):
        df2 = where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self):
        df2 = where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = float(finfo(x2.dtype).tiny)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * log(value)
        t3 = (ct1 + ct2) * log1p(ct3 * value)
        return t1 + t2 - t3
