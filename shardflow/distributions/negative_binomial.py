"""``NegativeBinomial(total_count, probs=... | logits=...)``: the number of successes before
``total_count`` failures, PyTorch's formulas. ``log_prob = r logsigmoid(-logits) +
k logsigmoid(logits) + lgamma(r + k) - lgamma(1 + k) - lgamma(r)`` (the normaliser is 0
where ``r + k = 0``); ``sample`` is a Gamma-Poisson mixture: ``Poisson(Gamma(r, exp(-logits)))``."""

from __future__ import annotations

from ..autograd import Size, no_grad
from ..ops import exp, lgamma, poisson, sigmoid, softplus
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import as_size, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


def _logsigmoid(x):
    return -softplus(-x)


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = as_size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_probs_or_logits(new, batch_shape)
        return self._init_expanded(NegativeBinomial, new, batch_shape)

    @property
    def mean(self):
        return self.total_count * exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * _logsigmoid(-self.logits)
                                 + value * _logsigmoid(self.logits))
        log_normalization = (-lgamma(self.total_count + value) + lgamma(1.0 + value)
                             + lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
