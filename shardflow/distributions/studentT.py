"""``StudentT(df, loc=0, scale=1)``: PyTorch's formulas. ``rsample = loc + scale X /
sqrt(Z / df)`` with ``X ~ N(0, 1)`` and ``Z ~ Chi2(df)`` (reparameterised through Gamma's
implicit gradient); ``log_prob = -(df + 1)/2 log1p(y^2 / df) - log(scale) - log(df)/2 -
log(pi)/2 - lgamma(df/2) + lgamma((df + 1)/2)``; the mean is NaN for ``df <= 1``, the variance
``scale^2 df / (df - 2)``, infinite for ``1 < df <= 2`` and NaN for ``df <= 1``."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import digamma, lgamma, log1p, rsqrt, where
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import as_size, broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = as_size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        return self._init_expanded(StudentT, new, batch_shape)

    @property
    def mean(self):
        return where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / where(df > 2, df - 2, 1.0)
        return where(df > 2, finite, where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
