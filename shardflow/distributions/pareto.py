"""``Pareto(scale, alpha)``: PyTorch's construction, ``Exponential(alpha)`` pushed through
``x -> scale * exp(x)``; support ``[scale, inf)``; ``mean = alpha scale / (alpha - 1)`` (alpha
clamped at 1, so infinite there), ``variance = scale^2 alpha / ((alpha - 1)^2 (alpha - 2))``
(alpha clamped at 2), ``entropy = log(scale / alpha) + 1 + 1/alpha``."""

from __future__ import annotations

from ..ops import where
from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    # ``where`` rather than PyTorch's ``clamp``: shardflow's clamp backward multiplies the
    # incoming gradient by its mask, so the inf - inf = NaN of the clamped branch would leak
    @property
    def mean(self):
        a = where(self.alpha >= 1, self.alpha, 1.0)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = where(self.alpha >= 2, self.alpha, 2.0)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
