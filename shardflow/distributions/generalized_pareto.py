"""``GeneralizedPareto(loc, scale, concentration)``: PyTorch 2.13's formulas with
``z = (x - loc) / scale`` and ``xi = concentration`` (``xi = 0`` is the exponential limit,
taken where ``isclose(xi, 0)``): ``log_prob = -log(scale) - (1/xi + 1) log1p(xi z)``,
``log_survival = -log1p(xi z) / xi``, ``icdf(u) = loc + scale / xi * expm1(-xi log1p(-u))``
(``rsample`` is ``icdf`` of a uniform); support ``[loc, loc - scale / xi]`` for ``xi < 0``
else ``[loc, inf)``."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import broadcast_to, exp, expm1, isclose, log, log1p, ones_like, rand, where, zeros_like
from . import constraints
from .distribution import Distribution
from .utils import as_size, broadcast_all, is_number

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = is_number(loc) and is_number(scale) and is_number(concentration)
        super().__init__(Size() if scalar else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   ("loc", "scale", "concentration"))

    def _safe_concentration(self):
        eq_zero = isclose(self.concentration, zeros_like(self.concentration))
        return eq_zero, where(eq_zero, ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(as_size(sample_shape)))
        return self.icdf(rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + ones_like(z)
        where_nonzero = where(y == 0, y, y * log1p(safe_conc * z))
        return -self.scale.log() - where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        return where(eq_zero, -z, -log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value):
        return log1p(-exp(self.log_survival_function(value)))

    def cdf(self, value):
        return exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * expm1(-safe_conc * logu)
        return where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = where(valid, self.concentration, 0.25)
        return where(valid, self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), math.nan)

    def entropy(self):
        return broadcast_to(log(self.scale) + self.concentration + 1, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
