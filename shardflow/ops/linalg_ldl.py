"""The LDL^T factorisation of a symmetric (indefinite) matrix with PyTorch's names:
``torch.linalg.ldl_factor`` / ``ldl_factor_ex`` and ``torch.linalg.ldl_solve``. Real float32 /
float64, any leading batch dims (``hermitian`` is the same as symmetric for real matrices).

Forward: LAPACK's Bunch-Kaufman ``sytrf`` (lower triangle, ``uplo='L'`` as torch) and
``sytrs`` through SciPy (``_host_lapack.py``), one matrix at a time. ``LD`` is ``sytrf``'s
compact form with the unused upper triangle zeroed (as torch returns it); ``pivots`` (int32)
are LAPACK's: ``pivots[i] > 0`` a 1x1 block with row ``i`` swapped with ``pivots[i]``,
a negative pair a 2x2 block. ``ldl_solve`` broadcasts the batch dims of ``LD`` and ``B``.

Neither is differentiable (torch has no derivative for them either): a backward through
them raises, naming the op.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import register
from . import _host_lapack as hl
from ._util import as_tensor_arg
from .cholesky import LinAlgError
from .decompositions import check_float_matrix
from .not_differentiable import NotDifferentiable
from .reduce import return_types

__all__ = ["linalg_ldl_factor", "linalg_ldl_factor_ex", "linalg_ldl_solve"]


def _sytrf(a):
    """``(LD, pivots, info)`` of each symmetric matrix of ``a`` (any device)."""
    flat, batch = hl.batched(np.ascontiguousarray(hl.host(a)))
    n = a.shape[-1]
    ld = np.empty_like(flat)
    piv = np.empty((flat.shape[0], n), dtype=np.int32)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    if n:
        routine = hl.lapack_routine("sytrf", flat)
        for b in range(flat.shape[0]):
            ld[b], piv[b], info[b] = routine(flat[b], lower=1)
    ld = np.tril(ld)  # the upper triangle is LAPACK's workspace
    return (hl.like(ld.reshape(a.shape), a), hl.like(piv.reshape(batch + (n,)), a),
            hl.like(info.reshape(batch), a))


def _sytrs(ld, piv, b):
    """``X`` with ``A X = B`` for ``LD, pivots = sytrf(A)`` (batch dims broadcast)."""
    ld_h, piv_h, b_h = hl.host(ld), hl.host(piv), hl.host(b)
    batch = np.broadcast_shapes(ld_h.shape[:-2], b_h.shape[:-2])
    n, r = ld_h.shape[-1], b_h.shape[-1]
    ld_f = np.broadcast_to(ld_h, batch + (n, n)).reshape(-1, n, n)
    piv_f = np.broadcast_to(piv_h, batch + (n,)).reshape(-1, n)
    b_f = np.broadcast_to(b_h, batch + (n, r)).reshape(-1, n, r)
    x = np.empty(b_f.shape, dtype=np.result_type(ld_h, b_h))
    if n and r:
        routine = hl.lapack_routine("sytrs", ld_f)
        for i in range(b_f.shape[0]):
            x[i] = routine(ld_f[i], piv_f[i], b_f[i], lower=1)[0]
    else:
        x[...] = 0
    return hl.like(x.reshape(batch + (n, r)), b)


def _check_square(A: Tensor, op: str) -> None:
    check_float_matrix(A, op)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


@register("linalg_ldl_factor_ex")
def linalg_ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False):
    """``torch.linalg.ldl_factor_ex``: ``(LD, pivots, info)``; ``info[i] = j > 0`` when the block
    diagonal ``D`` is exactly singular at ``D[j-1, j-1]`` (raised with ``check_errors=True``)."""
    A = as_tensor_arg(A, "A")
    _check_square(A, "torch.linalg.ldl_factor_ex")
    ld, piv, info = NotDifferentiable.apply(A, forward_fn=_sytrf, name="linalg_ldl_factor_ex",
                                           instead="torch.linalg.lu_factor or eigh")
    if check_errors:
        _raise_if_singular(info.array, "torch.linalg.ldl_factor_ex")
    return return_types.linalg_ldl_factor_ex(ld, piv, info)


def _raise_if_singular(info, op: str) -> None:
    info = hl.host(info)
    bad = np.flatnonzero(info)
    if bad.size:
        i = int(info.reshape(-1)[bad[0]])
        where = f"(Batch element {bad[0]}): " if info.ndim else ""
        raise LinAlgError(f"{op}: {where}The factorization could not be completed because D[{i},{i}] "
                          "is exactly zero (the matrix is singular); the factorization itself is "
                          "returned by linalg.ldl_factor_ex(A), whose info says where")


@register("linalg_ldl_factor")
def linalg_ldl_factor(A, *, hermitian: bool = False):
    """``torch.linalg.ldl_factor``: ``(LD, pivots)`` of the symmetric ``A = P L D L^T P^T``."""
    ld, piv, info = linalg_ldl_factor_ex(A, hermitian=hermitian)
    _raise_if_singular(info.array, "torch.linalg.ldl_factor")
    return return_types.linalg_ldl_factor(ld, piv)


@register("linalg_ldl_solve")
def linalg_ldl_solve(LD, pivots, B, *, hermitian: bool = False) -> Tensor:
    """``torch.linalg.ldl_solve``: ``X`` with ``A X = B`` given ``LD, pivots = ldl_factor(A)``."""
    LD, piv, B = as_tensor_arg(LD, "LD"), as_tensor_arg(pivots, "pivots"), as_tensor_arg(B, "B")
    _check_square(LD, "torch.linalg.ldl_solve")
    if B.ndim < 2:
        raise RuntimeError(f"torch.linalg.ldl_solve: B must have at least 2 dimensions, got shape "
                           f"{tuple(B.shape)}; solve for a vector b with B = b.unsqueeze(-1)")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} by "
                           f"{n} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if piv.array.dtype != np.int32 or tuple(piv.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: expected pivots of dtype int32 and shape "
                           f"{tuple(LD.shape[:-1])} as linalg.ldl_factor returns them, got {piv.dtype} "
                           f"of shape {tuple(piv.shape)}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but found "
                           f"LD of type {LD.dtype} and B of type {B.dtype} instead")
    return NotDifferentiable.apply(LD, piv, B, forward_fn=_sytrs, name="linalg_ldl_solve",
                                  instead="torch.linalg.solve")
