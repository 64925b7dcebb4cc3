"""``ContinuousBernoulli(probs | logits, lims=(0.499, 0.501))`` (Loaiza-Ganem & Cunningham
2019): density ``C(p) p^x (1-p)^(1-x)`` on ``[0, 1]``, PyTorch's formulas. The normaliser
``log C = log|log1p(-p) - log p| - log|1 - 2p|`` and the mean/variance/cdf/icdf are
replaced by their Taylor expansions around ``p = 1/2`` inside ``lims`` (where the closed
forms are 0/0); ``rsample = icdf(u)``."""

from __future__ import annotations

import math

from ..autograd import Size, no_grad
from ..ops import abs as _abs
from ..ops import (
    binary_cross_entropy_with_logits,
    log,
    log1p,
    ones_like,
    pow,
    rand,
    where,
    zeros_like,
)
from . import constraints
from .exp_family import ExponentialFamily
from .utils import (
    as_size,
    broadcast_all,
    clamp_probs,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = is_number(probs)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = is_number(logits)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = as_size(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        return self._init_expanded(ContinuousBernoulli, new, batch_shape)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return where(self._outside_unstable_region(), self.probs, self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut_probs = self._cut_probs()
        below_half = where(cut_probs <= 0.5, cut_probs, zeros_like(cut_probs))
        above_half = where(cut_probs >= 0.5, cut_probs, ones_like(cut_probs))
        log_norm = log(_abs(log1p(-cut_probs) - log(cut_probs))) - where(
            cut_probs <= 0.5, log1p(-2.0 * below_half), log(2.0 * above_half - 1.0))
        x = pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (log1p(-cut_probs) - log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * pow(x, 2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / pow(log1p(-cut_probs) - log(cut_probs), 2))
        x = pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (pow(cut_probs, value) * pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = where(self._outside_unstable_region(), cdfs, value)
        return where(value <= 0.0, zeros_like(value), where(value >= 1.0, ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return where(self._outside_unstable_region(),
                     (log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - log1p(-cut_probs))
                     / (log(cut_probs) - log1p(-cut_probs)), value)

    def entropy(self):
        log_probs0 = log1p(-self.probs)
        log_probs1 = log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0
