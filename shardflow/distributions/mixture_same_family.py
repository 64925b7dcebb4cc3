"""``MixtureSameFamily(mixture_distribution, component_distribution)``: a mixture whose
components are the last batch dim of one distribution, PyTorch's algorithm.
``log_prob(x) = logsumexp_k(component.log_prob(x) + log_softmax(mixture.logits)_k)`` (``x``
unsqueezed at the component dim); ``mean = sum_k p_k mean_k``; ``variance`` by the law of
total variance; ``cdf = sum_k p_k cdf_k``; ``sample`` draws a component index per sample
and gathers that component's draw (no ``rsample``, as PyTorch)."""

from __future__ import annotations

from ..autograd import Size, no_grad
from ..ops import gather, log_softmax, logsumexp
from ..ops import sum as _sum
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import as_size

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible "
                                 f"with `component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        return self._init_expanded(MixtureSameFamily, new, batch_shape,
                                   new._component_distribution.event_shape)

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return _sum(probs * self.component_distribution.mean, dim=-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = _sum(probs * self.component_distribution.variance, dim=dim)
        var_cond_mean = _sum(probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0), dim=dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        return _sum(cdf_x * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)  # (S, B, K)
        log_mix_prob = log_softmax(self.mixture_distribution.logits, dim=-1)  # (B, K)
        return logsumexp(log_prob_x + log_mix_prob, dim=-1)  # (S, B)

    def sample(self, sample_shape=Size()):
        sample_shape = as_size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)  # (S, B)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)  # (S, B, K, E)
            idx = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            idx = idx.repeat(*((1,) * len(mix_shape) + (1,) + es))  # (S, B, 1, E)
            return gather(comp_samples, gather_dim, idx).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
