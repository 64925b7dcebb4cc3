"""``Wishart(df, covariance_matrix= | precision_matrix= | scale_tril=)``: PyTorch's formulas
through the scale's lower Cholesky factor ``L``. ``rsample`` is Bartlett's decomposition:
``A`` lower triangular with ``A_ii = sqrt(chi2(df - i))`` (reparameterised through Gamma's
implicit gradient) and standard normals below the diagonal, the draw ``(L A)(L A)^T``; draws
that fail the positive-definite check are redrawn up to ``max_try_correction`` times with a
warning. ``log_prob = -df (p log2 / 2 + log|L|) - mvlgamma(df/2, p) + (df - p - 1)/2 log|X|
- tr(S^-1 X) / 2``; ``entropy`` uses the multivariate digamma. (PyTorch 2.13 warns
"Singular sample detected." on every ``rsample`` because it tests the draws the wrong way
round; this file warns only when a draw is singular.)"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import Size
from ..ops import (
    arange,
    cholesky_solve,
    digamma,
    einsum,
    eye,
    linalg_cholesky,
    mvlgamma,
    randn,
    tensor,
    where,
)
from ..ops import slogdet as _slogdet
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import as_size, finfo, is_number, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p: int):
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return digamma(x.unsqueeze(-1) - arange(p, dtype=x.dtype, device=x.device).div(2)).sum(-1)


class Wishart(ExponentialFamily):
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if is_number(df):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = Size(tuple(param.shape[-2:]))
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg_cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._make_chi2(batch_shape)

    def _make_chi2(self, batch_shape):
        p = self._event_shape[-1]
        steps = arange(p, dtype=self._unbroadcasted_scale_tril.dtype, device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = as_size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._event_shape = self.event_shape
        new._dist_chi2 = new._make_chi2(batch_shape)
        return self._init_expanded(Wishart, new, batch_shape, self.event_shape)

    def _full(self, matrix):
        return matrix.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.transpose(-2, -1))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return self._full(cholesky_solve(identity, L))

    @property
    def mean(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (V.pow(2) + einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=Size()):
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        chi = chi.clamp(min=float(finfo(chi.dtype).eps))
        below = randn(tuple(as_size(sample_shape)) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                      dtype=chi.dtype, device=chi.device)
        noise = chi.diag_embed(dim1=-2, dim2=-1) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = as_size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = is_singular.reshape(tuple(is_singular.shape) + (1, 1))
                sample = where(mask, self._bartlett_sampling(sample_shape), sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * _slogdet(value)[1]
                - cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)
