"""``HalfCauchy(scale)``: ``|X|`` for ``X ~ Cauchy(0, scale)`` (PyTorch's construction and
formulas, shared with HalfNormal in ``half_normal._HalfBase``); the mean is infinite."""

from __future__ import annotations

import math

from ..ops import full
from .cauchy import Cauchy
from .half_normal import _HalfBase
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(_HalfBase):
    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
