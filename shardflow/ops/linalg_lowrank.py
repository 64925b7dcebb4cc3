"""Randomised low-rank SVD and PCA with PyTorch's names: ``torch.svd_lowrank`` and
``torch.pca_lowrank`` (dense matrices, any leading batch dims).

The algorithm is torch's (``torch/_lowrank.py``: Halko, Martinsson & Tropp 2009, Algorithms
4.4 and 5.1). For ``A`` (m, n), transposed first when ``m < n``:

1. an orthonormal basis ``Q`` (m, q) of the range of ``A - M``: ``Q = qr((A - M) R)`` for a
   Gaussian ``R`` (n, q) drawn from shardflow's generator, then ``niter`` subspace iterations
   ``Q = qr((A - M) qr((A - M)^T Q))``;
2. ``B = Q^T (A - M)`` (q, n) and its small SVD ``B = U_B S V^T``; ``U = Q U_B``.

It returns ``(U, S, V)`` (``V``, not ``Vh``, as ``torch.svd``) with ``A - M ~ U diag(S) V^T``.
``pca_lowrank`` is ``svd_lowrank`` of ``A`` minus its column means (``center=True``). The
results are random (a different draw gives another basis of nearly the same subspace); for
a matrix of rank at most ``q`` they are exact up to the singular vectors' signs. Everything is
a composition of differentiable ops (``matmul``, ``linalg.qr``, ``linalg.svd``), so gradients
flow as in torch (for the same draw).
"""

from __future__ import annotations

from ..autograd import Tensor
from ..autograd.dispatch import register
from ._util import as_tensor_arg
from .creation import randn
from .decompositions import linalg_qr, linalg_svd

__all__ = ["svd_lowrank", "pca_lowrank"]


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """``Q`` (..., m, q) with orthonormal columns spanning about the range of ``A - M``."""
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = linalg_qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q if M is None else A.mT @ Q - M.mT @ Q
        Q = linalg_qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = linalg_qr(X).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None):
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M  # (..., q, n)
    U, S, Vh = linalg_svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if m < n else (U, S, V)


@register("svd_lowrank")
def svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None):
    """``torch.svd_lowrank``: ``(U, S, V)`` of rank ``q`` approximating ``A - M`` (module
    docstring); ``q`` should be a little above the rank sought."""
    A = as_tensor_arg(A, "A")
    if not A.dtype.is_floating_point:
        A = A.float()
    q = 6 if q is None else int(q)
    niter = 2 if niter is None else int(niter)
    return _svd_lowrank(A, q, niter, None if M is None else as_tensor_arg(M, "M").to(A.dtype))


@register("pca_lowrank")
def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """``torch.pca_lowrank``: ``(U, S, V)`` of the column-centred ``A`` (``center=True``):
    ``V``'s columns are the principal directions, ``S**2 / (m - 1)`` the variances."""
    A = as_tensor_arg(A, "A")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not A.dtype.is_floating_point:
        A = A.float()
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(-2, keepdim=True), q, niter, None)
