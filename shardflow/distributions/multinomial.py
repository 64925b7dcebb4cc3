"""``Multinomial(total_count=1, probs=... | logits=...)``: counts of ``total_count`` draws
over the last dim's categories, PyTorch's formulas. ``sample`` draws ``total_count``
categorical indices and scatter-adds them into counts; ``log_prob = lgamma(n + 1) -
sum lgamma(x_i + 1) + sum x_i logits_i`` (``0 * -inf`` counts 0); ``entropy`` is PyTorch's
``n H(cat) - lgamma(n + 1) + sum_i E[lgamma(x_i + 1)]`` with each marginal a Binomial."""

from __future__ import annotations

import math

from ..autograd import Size
from ..ops import exp, lgamma, ones_like, tensor, where, zeros
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import as_size, broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = as_size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        return self._init_expanded(Multinomial, new, batch_shape, self.event_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = as_size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
        # (n, *sample, *batch) -> (*sample, *batch, n)
        order = list(range(1, samples.dim())) + [0]
        samples = samples.permute(*order)
        counts = zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype, device=samples.device)
        counts.scatter_add_(-1, samples, ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        # an int64 tensor as PyTorch's (so lgamma(n + 1) is float32, as there)
        n = tensor(self.total_count, device=self.probs.device)
        term1 = n * self._categorical.entropy() - lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = exp(self._binomial.log_prob(support))
        weights = lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        logits = where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
