"""LU factorisation with partial pivoting and what rests on it, with PyTorch's names:
``torch.linalg.lu_factor`` / ``lu_factor_ex`` / ``lu`` / ``lu_solve`` and the older
``torch.lu``, ``torch.lu_unpack``, ``torch.lu_solve`` (``Tensor.lu``, ``Tensor.lu_solve``).
Real float32 / float64 matrices, any leading batch dims, rectangular ``(m, n)`` allowed
(``k = min(m, n)``).

Forward: LAPACK's ``getrf`` through SciPy (``_host_lapack.py``; on the host for a CuPy
array). ``A = P L U`` with ``L`` (m, k) unit lower triangular, ``U`` (k, n) upper triangular;
``LU`` packs both (``L``'s unit diagonal is implicit) and ``pivots`` (int32, 1-based) says
that row ``i`` was swapped with row ``pivots[i]`` (torch's and LAPACK's convention).
``pivot=False`` is refused on the CPU as torch does; on CUDA it is an unpivoted elimination.

``lu_unpack`` (``tril`` / ``triu`` of ``LU`` and the permutation matrix of the pivots) and
``lu_solve`` (a permutation and two triangular solves reading ``LU``'s triangles:
``X = U^-1 L^-1 P^T B``; ``adjoint``: ``X = P L^-H U^-H B``; ``left=False``: the adjoint
system of ``B^H``) are compositions of differentiable ops, so their gradients w.r.t. ``LU``
and ``B`` are those ops' (the function's exact derivative, as torch's formulas) at any order.

Backward of ``LU = lu_factor(A)`` (torch's ``linalg_lu_backward``, FunctionsManual.cpp; ``gL``
is the strictly lower part of ``gLU``'s first ``k`` columns, ``gU`` the upper part of its first
``k`` rows; ``^H`` is the transpose for real matrices):

* square: ``gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H``;
* wide (m < n, ``U = [U1 | U2]``): ``gA = P L^-H [tril(L^H gL - triu(gU) U^H, -1) U1^-H +
  triu(gU1) | gU2]``;
* tall (m > n, ``L = [L1; L2]``): ``gA = P [L1^-H triu(gU U^H - L^H tril(gL, -1)) +
  tril(gL1, -1); gL2] U^-H``.

It is written once with differentiable ops on ``LU`` as this node's output, so
``backward_graph`` (double backward) is the same function.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd import Function, Tensor, _wrap, no_grad
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..backend.user_warning import first_time
from . import _host_lapack as hl
from ._util import as_tensor_arg
from .cholesky import LinAlgError, linalg_solve_triangular
from .decompositions import check_float_matrix
from .reduce import return_types

__all__ = ["linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "linalg_lu_solve", "lu", "lu_unpack",
           "lu_solve"]


def permutation_matrix(pivots, m: int, dtype, like) -> np.ndarray:
    """``P`` (``(..., m, m)``, ``dtype``, on ``like``'s device) with ``A = P L U`` for LAPACK
    ``pivots`` (``(..., k)``, 1-based)."""
    perm = hl.pivots_to_permutation(hl.host(pivots), m)  # (..., m)
    p = np.zeros(perm.shape + (m,), dtype=dtype)
    np.put_along_axis(p, perm[..., None, :], 1, axis=-2)  # column j: a one in row perm[j]
    return hl.like(p, like)


def _unpivoted_lu(a):
    """Doolittle elimination without row interchanges on the array's own device (``pivot=False``,
    CUDA only in torch): ``(LU, pivots = 1..k, info)``."""
    xp = get_array_module(a)
    lu = a.copy()
    m, n = a.shape[-2:]
    k = min(m, n)
    for j in range(k):
        lu[..., j + 1:, j] /= lu[..., j, j][..., None]
        lu[..., j + 1:, j + 1:] -= lu[..., j + 1:, j:j + 1] * lu[..., j:j + 1, j + 1:]
    zero = hl.host(xp.diagonal(lu, 0, -2, -1) == 0)  # (..., k)
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    piv = np.broadcast_to(np.arange(1, k + 1, dtype=np.int32), a.shape[:-2] + (k,))
    return lu, hl.like(piv.copy(), a), hl.like(info, a)


def _lu_factor_grad(lu: Tensor, perm_p, g: Tensor) -> Tensor:
    """``gA`` of ``LU = lu_factor(A)`` (module docstring), in differentiable ops of ``lu``."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = lu[..., :, :k].tril(-1) + _eye_like(lu, m, k)  # (..., m, k)
    up = lu[..., :k, :].triu()  # (..., k, n)
    g_low, g_up = g[..., :, :k], g[..., :k, :]
    if m == n:
        ga = (low.mT @ g_low).tril(-1) + (g_up @ up.mT).triu()
        ga = linalg_solve_triangular(up.mT, ga, upper=False, left=False)
        ga = linalg_solve_triangular(low.mT, ga, upper=True, unitriangular=True)
    elif m < n:
        from .shape import cat

        ga = (low.mT @ g_low - g_up.triu() @ up.mT).tril(-1)  # (..., k, k)
        ga = linalg_solve_triangular(up[..., :, :k].mT, ga, upper=False, left=False)
        ga = cat([ga + g_up[..., :, :k].triu(), g_up[..., :, k:]], -1)
        ga = linalg_solve_triangular(low.mT, ga, upper=True, unitriangular=True)
    else:
        from .shape import cat

        ga = (g_up @ up.mT - low.mT @ g_low.tril(-1)).triu()  # (..., k, k)
        ga = linalg_solve_triangular(low[..., :k, :].mT, ga, upper=True, unitriangular=True)
        ga = cat([ga + g_low[..., :k, :].tril(-1), g_low[..., k:, :]], -2)
        ga = linalg_solve_triangular(up.mT, ga, upper=False, left=False)
    return ga if perm_p is None else _wrap(perm_p) @ ga


def _eye_like(t: Tensor, m: int, k: int) -> Tensor:
    xp = get_array_module(t.array)
    return _wrap(xp.eye(m, k, dtype=t.array.dtype))


class LUFactor(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a, pivot=True):
        if pivot:
            lu, piv, info = hl.getrf(hl.host(a))
            lu, piv, info = hl.like(lu, a), hl.like(piv, a), hl.like(info, a)
            self.p = permutation_matrix(piv, a.shape[-2], a.dtype, a)
        else:
            lu, piv, info = _unpivoted_lu(a)
            self.p = None
        self.lu = lu
        return lu, piv, info

    def backward(self, g_lu, *_):
        with no_grad():
            return _lu_factor_grad(_wrap(self.lu), self.p, _wrap(g_lu)).array

    def backward_graph(self, g_lu, *_):
        return _lu_factor_grad(self.saved_output(0, self.lu), self.p, g_lu)


def _check_pivot(A: Tensor, pivot: bool, op: str) -> None:
    if not pivot and A.device.type == "cpu":
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU; use pivot=True "
                           "(the default), or move the matrix to a CUDA device")


def _raise_if_singular(info, op: str) -> None:
    """torch's error for an exactly singular ``U`` (``info > 0``), naming the batch element."""
    info = hl.host(info)
    bad = np.flatnonzero(info)
    if bad.size == 0:
        return
    i = int(info.reshape(-1)[bad[0]])
    where = f"(Batch element {bad[0]}): " if info.ndim else ""
    raise LinAlgError(
        f"{op}: {where}U[{i},{i}] is zero and using it on lu_solve would result in a division by "
        "zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) "
        "or linalg.lu_factor_ex(A, pivot)"
    )


@register("linalg_lu_factor_ex")
def linalg_lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    """``torch.linalg.lu_factor_ex``: ``(LU, pivots, info)``; a singular matrix gives
    ``info[i] = j > 0`` (``U[j-1, j-1] == 0``) and raises only with ``check_errors=True``."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "torch.linalg.lu_factor_ex")
    _check_pivot(A, pivot, "linalg.lu_factor_ex")
    lu_, piv, info = LUFactor.apply(A, pivot=bool(pivot))
    if check_errors:
        _raise_if_singular(info.array, "torch.linalg.lu_factor_ex")
    return return_types.linalg_lu_factor_ex(lu_, piv, info)


@register("linalg_lu_factor")
def linalg_lu_factor(A, *, pivot: bool = True):
    """``torch.linalg.lu_factor``: ``(LU, pivots)``; raises ``LinAlgError`` for a singular matrix
    (``lu_factor_ex`` returns its ``info`` instead)."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "torch.linalg.lu_factor")
    _check_pivot(A, pivot, "linalg.lu_factor")
    lu_, piv, info = LUFactor.apply(A, pivot=bool(pivot))
    _raise_if_singular(info.array, "torch.linalg.lu_factor")
    return return_types.linalg_lu_factor(lu_, piv)


def _empty(like: Tensor) -> Tensor:
    return _wrap(get_array_module(like.array).zeros((0,), dtype=like.array.dtype))


@register("lu_unpack")
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True):
    """``torch.lu_unpack``: ``(P, L, U)`` of a packed ``LU`` and its ``pivots``: ``L`` (m, k) is
    ``LU``'s strict lower part plus the identity, ``U`` (k, n) its upper part, ``P`` (m, m) the
    permutation of the pivots; the parts not asked for are empty tensors."""
    LU = as_tensor_arg(LU_data, "LU_data")
    piv = as_tensor_arg(LU_pivots, "LU_pivots")
    if LU.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: LU_data must have at least 2 dimensions, got shape "
                           f"{tuple(LU.shape)}")
    if piv.array.dtype != np.int32:
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           f"dtype, got {piv.dtype}; pass the pivots linalg.lu_factor returned "
                           "(or convert with .int())")
    m, n = LU.shape[-2:]
    k = min(m, n)
    if tuple(piv.shape[-1:]) != (k,):
        raise RuntimeError(f"torch.lu_unpack: LU_pivots.size(-1) must be min(m, n) = {k} for LU_data "
                           f"of shape {tuple(LU.shape)}, got pivots of shape {tuple(piv.shape)}")
    if unpack_pivots:
        p = _wrap(permutation_matrix(piv.array, m, LU.array.dtype, LU.array))
    else:
        p = _empty(LU)
    if not unpack_data:
        return return_types.lu_unpack(p, _empty(LU), _empty(LU))
    low = LU[..., :, :k].tril(-1) + _eye_like(LU, m, k)
    return return_types.lu_unpack(p, low, LU[..., :k, :].triu())


@register("linalg_lu")
def linalg_lu(A, *, pivot: bool = True):
    """``torch.linalg.lu``: ``(P, L, U)`` with ``A = P L U`` (no error for singular ``A``);
    ``pivot=False`` (CUDA only) gives an empty ``P``."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.lu")
    _check_pivot(A, pivot, "linalg.lu")
    lu_, piv, _ = LUFactor.apply(A, pivot=bool(pivot))
    p, low, up = lu_unpack(lu_, piv, unpack_pivots=bool(pivot))
    return return_types.linalg_lu(p, low, up)


def _check_lu_solve(LU: Tensor, piv: Tensor, B: Tensor, left: bool) -> None:
    check_float_matrix(LU, "torch.linalg.lu_solve")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    if B.ndim < 2:
        raise RuntimeError(f"linalg.lu_solve: The input tensor B must have at least 2 dimensions, got "
                           f"shape {tuple(B.shape)}; solve for a vector b with B = b.unsqueeze(-1)")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if B.dtype is not LU.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of "
                           f"type {LU.dtype} and B of type {B.dtype} instead")
    if piv.array.dtype != np.int32 or tuple(piv.shape[-1:]) != (n,):
        raise RuntimeError(f"linalg.lu_solve: expected pivots of dtype int32 and shape (*, {n}) as "
                           f"linalg.lu_factor returns them, got {piv.dtype} of shape {tuple(piv.shape)}")


@register("linalg_lu_solve")
def linalg_lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """``torch.linalg.lu_solve``: ``X`` with ``A X = B`` given ``LU, pivots = lu_factor(A)``
    (``adjoint``: ``A^H X = B``; ``left=False``: ``X A = B``). Batch dims broadcast."""
    LU, piv, B = as_tensor_arg(LU, "LU"), as_tensor_arg(pivots, "pivots"), as_tensor_arg(B, "B")
    _check_lu_solve(LU, piv, B, left)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return linalg_lu_solve(LU, piv, B.mT, left=True, adjoint=not adjoint).mT
    p = _wrap(permutation_matrix(piv.array, LU.shape[-1], LU.array.dtype, LU.array))
    if adjoint:  # A^H = U^H L^H P^T: X = P L^-H U^-H B
        y = linalg_solve_triangular(LU.mT, B, upper=False)
        return p @ linalg_solve_triangular(LU.mT, y, upper=True, unitriangular=True)
    y = linalg_solve_triangular(LU, p.mT @ B, upper=False, unitriangular=True)
    return linalg_solve_triangular(LU, y, upper=True)


@register("lu_solve")
def lu_solve(input, LU_data, LU_pivots) -> Tensor:
    """``torch.lu_solve(b, LU_data, LU_pivots)`` (deprecated in torch for ``linalg.lu_solve``,
    with torch's warning, given once per process as torch's ``TORCH_WARN_ONCE``)."""
    if first_time("lu_solve"):  # torch's TORCH_WARN_ONCE: once per process
        warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed "
                      "in a future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments "
                      "reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
                      "X = torch.linalg.lu_solve(LU, pivots, B)", UserWarning, stacklevel=2)
    return linalg_lu_solve(LU_data, LU_pivots, input)


@register("lu")
def lu(A, pivot: bool = True, get_infos: bool = False):
    """``torch.lu`` (deprecated in torch for ``linalg.lu_factor``): ``(LU, pivots)``, or
    ``(LU, pivots, infos)`` with ``get_infos=True`` (which also stops the singular check);
    torch's deprecation warning, once per process (``set_warn_always(True)``: every call)."""
    if first_time("lu"):  # torch's TORCH_WARN_ONCE: once per process
        warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
                      "and will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, "
                      "compute_pivots)\nshould be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
                      "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\n"
                      "should be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)",
                      UserWarning, stacklevel=2)
    lu_, piv, info = linalg_lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    if get_infos:
        return return_types._lu_with_info(lu_, piv, info)
    return lu_, piv
