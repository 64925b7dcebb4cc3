"""``Geometric(probs=... | logits=...)``: the number of failures before the first success
(support ``{0, 1, ...}``), PyTorch's formulas. ``sample = floor(log u / log1p(-p))`` with
``u ~ U[tiny, 1)``; ``log_prob = k log1p(-p) + log p`` (``p = 1, k = 0`` gives 0);
``entropy = BCEWithLogits(logits, p) / p``. ``probs`` must be positive (checked as PyTorch)."""

from __future__ import annotations

from ..autograd import Size, no_grad
from ..ops import binary_cross_entropy_with_logits, empty, where, zeros_like
from . import constraints
from .distribution import Distribution
from .utils import (
    as_size,
    broadcast_all,
    finfo,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Geometric"]


class Geometric(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        batch_shape = Size() if is_number(given) else given.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                    f"invalid values:\n{self.probs.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = as_size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        return self._init_expanded(Geometric, new, batch_shape)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        tiny = float(finfo(self.probs.dtype).tiny)
        with no_grad():
            u = empty(shape, dtype=self.probs.dtype, device=self.probs.device).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
