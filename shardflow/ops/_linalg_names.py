"""``torch.linalg``: the names shardflow has, over the ops of ``linalg_ops.py``,
``reduce.py``, ``cholesky.py``, ``decompositions.py``, ``linalg_derived.py`` and the
``linalg_lu`` / ``linalg_eig`` / ``linalg_householder`` / ``linalg_ldl`` files
(``shardflow.linalg``, as ``torch.linalg``).

Provided: ``vector_norm``, ``matrix_norm`` (``'fro'``, ``'nuc'``, ``1``, ``-1``, ``2``, ``-2``,
``inf``, ``-inf``), ``norm``, ``inv`` / ``inv_ex``, ``det``, ``slogdet``, ``solve`` /
``solve_ex``, ``cross``, ``matmul``, ``multi_dot``, ``matrix_power``, ``diagonal``, ``vecdot``,
``LinAlgError``; the decompositions ``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``,
``cholesky`` / ``cholesky_ex``, and ``solve_triangular``, ``lstsq``, ``pinv``,
``matrix_rank``, ``matrix_exp``, ``cond``, ``tensorinv``, ``tensorsolve``, ``vander``. The nuclear and spectral norms are sums / extremes
of ``svdvals`` (so their gradients are ``U diag(g') Vh``, torch's).
Also ``lu_factor`` / ``lu_factor_ex`` / ``lu`` / ``lu_solve`` (``linalg_lu.py``), ``eig`` /
``eigvals`` (``linalg_eig.py``), ``householder_product`` (``linalg_householder.py``),
``ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve`` (``linalg_ldl.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import register
from ..autograd.out_arg import writes_out
from ..backend import linalg_errors_raised
from . import linalg_ops as _lo
from .matmul import matmul
from .reduce import return_types, vector_norm
from .shape import diagonal as _diagonal

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "inv_ex", "det", "slogdet", "solve", "solve_ex",
           "cross", "matmul", "multi_dot", "matrix_power", "diagonal", "vecdot", "LinAlgError",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "cholesky", "cholesky_ex", "solve_triangular",
           "lstsq", "pinv", "matrix_rank", "matrix_exp", "cond", "tensorinv", "tensorsolve", "vander",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "eig", "eigvals",
           "householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve"]


from .cholesky import LinAlgError  # one torch.linalg.LinAlgError for every linalg op
from .cholesky import linalg_cholesky as cholesky
from .cholesky import linalg_solve_triangular as solve_triangular
from .decompositions import linalg_eigh as eigh
from .decompositions import linalg_eigvalsh as eigvalsh
from .decompositions import linalg_qr as qr
from .decompositions import linalg_svd as svd
from .decompositions import linalg_svdvals as svdvals
from .linalg_derived import linalg_cholesky_ex as cholesky_ex
from .linalg_derived import linalg_cond as cond
from .linalg_derived import linalg_lstsq as lstsq
from .linalg_derived import linalg_matrix_exp as matrix_exp
from .linalg_derived import linalg_matrix_rank as matrix_rank
from .linalg_derived import linalg_pinv as pinv
from .linalg_eig import linalg_eig as eig
from .linalg_eig import linalg_eigvals as eigvals
from .linalg_householder import linalg_householder_product as householder_product
from .linalg_ldl import linalg_ldl_factor as ldl_factor
from .linalg_ldl import linalg_ldl_factor_ex as ldl_factor_ex
from .linalg_ldl import linalg_ldl_solve as ldl_solve
from .linalg_lu import linalg_lu as lu
from .linalg_lu import linalg_lu_factor as lu_factor
from .linalg_lu import linalg_lu_factor_ex as lu_factor_ex
from .linalg_lu import linalg_lu_solve as lu_solve
from .tensor_products import linalg_cross as _linalg_cross


def _checked(fn, *args, **kwargs):
    try:
        with linalg_errors_raised():
            return fn(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"linalg: {e}; the matrix is singular (not invertible)") from None


@writes_out("linalg_inv")
def inv(A: Tensor) -> Tensor:
    return _checked(_lo.inverse, A)


@writes_out("linalg_inv_ex")
def inv_ex(A: Tensor, *, check_errors: bool = False):
    """``(inverse, info)``; ``info`` is 0 (a singular matrix raises ``LinAlgError``)."""
    from .creation import zeros

    return return_types.linalg_inv_ex(inv(A), zeros(A.shape[:-2], dtype="int32"))


@writes_out("linalg_det")
def det(A: Tensor) -> Tensor:
    return _lo.det(A)


@writes_out("linalg_slogdet")
def slogdet(A: Tensor):
    return return_types.linalg_slogdet(*_lo.slogdet(A))


@writes_out("linalg_solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    return _checked(_lo.solve, A, B, left=left)


@writes_out("linalg_solve_ex")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    from .creation import zeros

    return return_types.linalg_solve_ex(solve(A, B, left=left), zeros(A.shape[:-2], dtype="int32"))


@writes_out("linalg_cross")
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    return _linalg_cross(input, other, dim=dim)


@writes_out("linalg_matrix_power")
def matrix_power(A: Tensor, n: int) -> Tensor:
    return _lo.matrix_power(A, n)


@writes_out("linalg_multi_dot")
def multi_dot(tensors) -> Tensor:
    """``tensors[0] @ tensors[1] @ ...``; a 1-D first (last) tensor is a row (column) vector."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    return _diagonal(A, offset, dim1, dim2)


@register("linalg_vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``sum(conj(x) * y, dim)`` (x conjugated, as torch); a registered op so that autocast
    runs it in the low dtype, as PyTorch's CPU autocast does."""
    return ((x.conj() if x.is_complex() else x) * y).sum(dim)


@writes_out("linalg_matrix_norm")
def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """'fro': the 2-norm of the entries; ``1`` / ``-1``: max / min column abs sum; ``inf`` /
    ``-inf``: max / min row abs sum (over the two ``dim``)."""
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = dim
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(inner, keepdim=True)
        r = s.amax(outer, keepdim=True) if ord > 0 else s.amin(outer, keepdim=True)
        return r if keepdim else r.squeeze(max(d0 % A.ndim, d1 % A.ndim)).squeeze(min(d0 % A.ndim, d1 % A.ndim))
    if ord in ("nuc", 2, -2):
        return _singular_value_norm(A, ord, d0 % A.ndim, d1 % A.ndim, keepdim)
    raise RuntimeError(
        f"linalg.matrix_norm: Order {ord!r} not supported; use one of 'fro', 'nuc', 1, -1, 2, -2, "
        "inf, -inf"
    )


def _singular_value_norm(A: Tensor, ord, d0: int, d1: int, keepdim: bool) -> Tensor:
    """'nuc': the sum of the singular values over dims (d0, d1); 2 / -2: the largest /
    smallest (the two dims are moved last for ``svdvals``)."""
    rest = [d for d in range(A.ndim) if d not in (d0, d1)]
    s = svdvals(A.permute(*rest, d0, d1))  # (..., k)
    r = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


@writes_out("linalg_norm")
def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.norm``: a vector norm over one dim (or the flattened input when
    ``ord`` is None), a matrix norm over two dims or of a 2-D input with ``ord`` given."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.ndim == 2):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


@writes_out("linalg_tensorinv")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """``torch.linalg.tensorinv``: the inverse of ``A`` seen as the square matrix
    ``(prod(A.shape[:ind]), prod(A.shape[ind:]))``, shaped ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), "
            f"but got {cols} != {rows} (shape {tuple(A.shape)}, ind={ind})"
        )
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


@writes_out("linalg_tensorsolve")
def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """``torch.linalg.tensorsolve``: ``X`` with ``tensordot(A, X, X.ndim) = B``; ``dims`` of
    ``A`` are moved to the end first. ``X.shape = A.shape[B.ndim:]``."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in dims], *dims)
    rows = math.prod(B.shape)
    x_shape = tuple(A.shape[B.ndim:])
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or math.prod(x_shape) != rows:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {math.prod(x_shape)} != {rows} "
            f"(A: {tuple(A.shape)}, B: {tuple(B.shape)})"
        )
    return solve(A.reshape(rows, rows), B.reshape(rows)).reshape(*x_shape)


def vander(x: Tensor, N: int | None = None) -> Tensor:
    """``torch.linalg.vander``: ``(..., n) -> (..., n, N)`` with columns ``x^0 .. x^(N-1)``
    (increasing powers), as a cumulative product so that ``x = 0`` has finite gradients."""
    from .creation import ones_like
    from .shape import cat

    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension, got a 0-d tensor; "
                           "use x.reshape(1)")
    n = x.shape[-1] if N is None else int(N)
    if n < 1:
        raise RuntimeError(f"N must be greater than 1, got {n}")
    col = x.unsqueeze(-1)
    first = ones_like(col)
    if n == 1:
        return first
    powers = col.expand(*x.shape, n - 1).cumprod(-1)
    return cat([first, powers], -1)
