"""``LKJCholesky(dim, concentration=1)``: the LKJ distribution over Cholesky factors of
``dim x dim`` correlation matrices, PyTorch's onion-method sampler and density. Row ``i`` of
a draw is ``sqrt(y_i) u_i`` below the diagonal (``u_i`` uniform on the hypersphere, ``y_i ~
Beta(i/2, eta + (dim - 2 - i)/2)`` -- row 0 is ``e_0``) with the diagonal completing the
unit norm; ``log_prob = sum_i (2 (eta - 1) + dim - i) log L_ii - log normaliser`` with the
normaliser ``(dim-1)/2 log pi + mvlgamma(alpha - 1/2, dim-1) - (dim-1) lgamma(alpha)``,
``alpha = eta + (dim-1)/2``. No ``rsample`` (as PyTorch)."""

from __future__ import annotations

import math

from ..autograd import Size, no_grad
from ..ops import arange, cat, diag_embed, lgamma, mvlgamma, randn, where
from ..ops import sum as _sum
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import as_size, broadcast_all, finfo

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the onion method's Beta marginals, one per row
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = as_size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._init_expanded(LKJCholesky, new, batch_shape, self.event_shape)

    def sample(self, sample_shape=Size()):
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)  # (S, B, dim, 1)
            u_normal = randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype, device=y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            first_row = (arange(self.dim, device=y.device) == 0).reshape(-1, 1)
            u_hypersphere = where(first_row, 0.0, u_normal / where(first_row, 1.0, norm))
            w = y.sqrt() * u_hypersphere
            tiny = float(finfo(w.dtype).tiny)
            diag_elems = (1 - _sum(w ** 2, dim=-1)).clamp(min=tiny).sqrt()
            return w + diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = _sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
