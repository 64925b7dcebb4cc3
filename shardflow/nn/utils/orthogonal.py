"""``torch.nn.utils.parametrizations.orthogonal``: a matrix (or a batch of matrices) kept
orthogonal (orthonormal columns when tall, rows when wide) by a parametrization, torch's
algorithm step for step so that values, gradients and the registered state are torch's.

* ``orthogonal_map``: ``"matrix_exp"`` (``Q = exp(A)``, ``A`` skew-symmetric from the lower
  triangle), ``"cayley"`` (``Q = (I - A/2)^{-1} (I + A/2)``) or ``"householder"`` (a product of
  reflectors, ``linalg.householder_product``); default ``"matrix_exp"`` for a square (or
  complex) matrix, ``"householder"`` otherwise.
* ``use_trivialization=True`` (default): a buffer ``base`` holds an orthogonal matrix and the
  forward returns ``base @ map(X)``; registering sets ``base`` to the weight itself if it is
  orthogonal, else to the Q of its QR decomposition (a tall weight is first completed with
  ``randn`` columns, the same draws as torch after the same seed), and the original to ``-I``.
* ``use_trivialization=False``: only ``"householder"`` can be assigned to (torch's
  NotImplementedError for the others).
"""

from __future__ import annotations

import enum

from ...autograd import Tensor, no_grad
from ...backend.info import finfo
from ...ops import allclose, cat, eye, geqrf, matrix_exp, randn, zeros_like
from ...ops import linalg_householder_product as householder_product
from ...ops._linalg_names import solve
from ..module import Module
from . import parametrize

__all__ = ["orthogonal"]


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    eye_k = eye(k, dtype=Q.dtype, device=Q.device)
    return bool(allclose(Q.mH @ Q, eye_k, atol=10.0 * n * finfo(Q.dtype).eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of ``A = QR`` with ``diag(R) >= 0`` (``A`` tall)."""
    X, tau = geqrf(A)
    Q = householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:  # embed the tall matrix into a square one
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-symmetric (skew-hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                eye_n = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(eye_n - 0.5 * A, eye_n + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # X's diagonal (+-1) flips columns; it is not differentiated through, as in torch
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            A, tau = geqrf(Q)
            diag = A.diagonal(dim1=-2, dim2=-1)
            diag.sign_()
            diag[tau == 0.0] *= -1  # LAPACK's exact zero: no reflection in that column
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete Q into a full n x n orthogonal matrix
            N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -I: householder(zeros) == eye, and exp(0) == I, so the forward returns base
        neg_id = zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Register an orthogonal parametrization on ``module.<name>`` (see the module docstring)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
