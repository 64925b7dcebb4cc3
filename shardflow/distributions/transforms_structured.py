"""The structured transforms of ``torch.distributions.transforms`` (re-exported there):
``SoftmaxTransform``, ``StickBreakingTransform`` (R^K -> the (K+1)-simplex; LogisticNormal),
``ReshapeTransform``, ``CatTransform``, ``StackTransform``, ``LowerCholeskyTransform``,
``PositiveDefiniteTransform``, ``CorrCholeskyTransform`` (R^(D(D-1)/2) -> Cholesky factors of
correlation matrices) and ``CumulativeDistributionTransform``. Formulas are PyTorch's:

* stick breaking: ``z_i = sigmoid(x_i - log(K - i))``, ``y_i = z_i prod_{j<i}(1 - z_j)``, the
  last entry the remaining stick; ``log|det J| = sum(-x' + logsigmoid(x') + log y_i)``.
* corr-Cholesky: ``tanh`` of the unconstrained vector into the strictly lower triangle, each
  row scaled by the running ``sqrt(1 - sum of squares)``; the Jacobian is the tanh part plus
  ``1/2 sum log(1 - cumsum(y^2))`` over the strictly lower triangle (diag -2).
"""

from __future__ import annotations

import math

from ..ops import cat, cumsum, eye, pad, softplus, stack
from ..ops import linalg_cholesky as _cholesky
from . import constraints
from .transforms import Transform, _clipped_sigmoid
from .utils import (
    as_size,
    finfo,
    lazy_property,
    sum_rightmost,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform"]


def _logsigmoid(x):
    return -softplus(-x)


class SoftmaxTransform(Transform):
    """``exp(x) / sum exp(x)`` over the last dim (not bijective; ``inv`` is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)  # K, K-1, ..., 1
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return pad(z, [0, 1], value=1) * pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(finfo(y.dtype).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        return (-x + _logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape`` (Jacobian 1)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = as_size(in_shape)
        self.out_shape = as_size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        return self._reshape_shape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshape_shape(shape, self.out_shape, self.in_shape)

    @staticmethod
    def _reshape_shape(shape, src, dst):
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if tuple(shape[cut:]) != tuple(src):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {src}")
        return tuple(shape[:cut]) + tuple(dst)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix -> a lower-triangular one with a positive diagonal
    (strict lower triangle kept, diagonal exponentiated). Not bijective, as PyTorch."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """``L L^T`` of ``LowerCholeskyTransform(x)``; ``inv`` goes through ``cholesky``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_cholesky(y))


class CorrCholeskyTransform(Transform):
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = x.tanh()
        eps = float(finfo(x.dtype).eps)
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - cumsum(y * y, dim=-1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


def _check_dim(t, dim, what):
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {t.dim()} dimensions")


class CatTransform(Transform):
    """``transforms[i]`` applied to consecutive slices of ``lengths[i]`` along ``dim``."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, t, name, what):
        _check_dim(t, self.dim, what)
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal length {self.length}")

    def _slices(self, t):
        start = 0
        for length in self.lengths:
            yield t.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        self._check(x, "x", "tensor")
        return cat([tr(s) for tr, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y", "tensor")
        return cat([tr.inv(s) for tr, s in zip(self.transforms, self._slices(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        logdetjacs = []
        for trans, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            logdetjac = trans.log_abs_det_jacobian(xs, ys)
            if trans.event_dim < self.event_dim:
                logdetjac = sum_rightmost(logdetjac, self.event_dim - trans.event_dim)
            logdetjacs.append(logdetjac)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        if dim < 0:
            return cat(logdetjacs, dim=dim)
        return sum(logdetjacs)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """``transforms[i]`` applied to the i-th slice along ``dim`` (``select``), restacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _check(self, t, name, what):
        _check_dim(t, self.dim, what)
        if t.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal "
                                 f"len(transforms) {len(self.transforms)}")

    def _call(self, x):
        self._check(x, "x", "tensor")
        return stack([tr(s) for s, tr in zip(self._slice(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y", "tensor")
        return stack([tr.inv(s) for s, tr in zip(self._slice(y), self.transforms)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")
        return stack([tr.log_abs_det_jacobian(xs, ys) for xs, ys, tr
                      in zip(self._slice(x), self._slice(y), self.transforms)], dim=self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``distribution.cdf`` as a transform onto ``[0, 1]`` (inverse ``icdf``; the Jacobian is
    the density, ``log_prob``)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
