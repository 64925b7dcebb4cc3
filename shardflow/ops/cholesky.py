"""Cholesky factorisation and triangular solves, the linear algebra ``distributions`` needs
(MultivariateNormal's scale_tril / precision_matrix, its log_prob and KL), with PyTorch's
names: ``torch.cholesky``, ``torch.linalg.cholesky``, ``torch.linalg.solve_triangular``,
``torch.cholesky_solve`` (``shardflow.linalg`` re-exports the ``linalg_*`` ones under
PyTorch's short names). Real floating dtypes, any batch dims (broadcast like PyTorch's).

Forward: ``cholesky`` is the backend's batched LAPACK ``potrf`` (``np.linalg.cholesky``;
it reads the lower triangle, as PyTorch does). A triangular solve is the backend's batched
``solve`` on the triangle the caller names (the other triangle is ignored, the diagonal
replaced by ones when ``unitriangular``): LU of a triangular matrix is the matrix itself,
so this is a forward/back substitution at LAPACK's cost, and it batches, which SciPy's
``solve_triangular`` does not.

Backward (PyTorch's formulas, ``FunctionsManual.cpp``):

* ``L = cholesky(A)``: ``gA = L^-T Phi(L^T gL) L^-1`` with ``Phi(X) = (T + tril(T, -1)^T) / 2``,
  ``T = tril(X)`` (the same non-symmetric gradient PyTorch returns).
* ``X = A^-1 B`` (left): ``gB = A^-T gX``, ``gA = -gB X^T``; ``X = B A^-1`` (right):
  ``gB = gX A^-T``, ``gA = -X^T gB``; ``gA`` keeps only the triangle that was read (strictly,
  when ``unitriangular``).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module, linalg_errors_raised
from ._util import as_tensor_arg

__all__ = ["cholesky", "linalg_cholesky", "linalg_solve_triangular", "cholesky_solve",
           "cholesky_inverse", "LinAlgError"]


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a factorisation or solve that cannot be completed."""


def _mT(a):
    return a.swapaxes(-1, -2)


def _tri(xp, a, upper: bool, unit: bool):
    t = xp.triu(a) if upper else xp.tril(a)
    if unit:
        n = a.shape[-1]
        t = t * (1 - xp.eye(n, dtype=a.dtype)) + xp.eye(n, dtype=a.dtype)
    return t


def _solve(xp, a, b):
    """a^-1 b with a and b batched (batch dims broadcast)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]),
                           xp.broadcast_to(b, batch + b.shape[-2:]))


def _tri_solve(xp, a, b, upper, left, unit):
    t = _tri(xp, a, upper, unit)
    if left:
        return _solve(xp, t, b)
    return _mT(_solve(xp, _mT(t), _mT(b)))


def _first_bad_minor(xp, a) -> int:
    """The order of the first leading minor that is not positive-definite (for the error)."""
    m = a.reshape((-1,) + a.shape[-2:])
    for k in range(1, a.shape[-1] + 1):
        try:
            with linalg_errors_raised():
                xp.linalg.cholesky(m[:, :k, :k])
        except np.linalg.LinAlgError:
            return k
    return a.shape[-1]


class Cholesky(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a, upper=False):
        xp = get_array_module(a)
        try:
            with linalg_errors_raised():  # (CuPy reports a failed factor only under it)
                low = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise LinAlgError(
                "linalg.cholesky: The factorization could not be completed because the input is "
                f"not positive-definite (the leading minor of order {_first_bad_minor(xp, a)} is "
                "not positive-definite). Check that the matrix is symmetric positive-definite "
                "(e.g. add a small multiple of the identity)"
            ) from None
        if xp is np and not np.isfinite(low).all():
            raise LinAlgError("linalg.cholesky: the input has non-finite entries")
        self.low, self.upper = low, upper
        return _mT(low).copy() if upper else low

    def backward(self, g):
        xp = get_array_module(g)
        low = self.low
        gl = _mT(g) if self.upper else g
        t = xp.tril(_mT(low) @ gl)
        phi = 0.5 * (t + _mT(xp.tril(t, -1)))
        ga = _tri_solve(xp, _mT(low), phi, upper=True, left=True, unit=False)
        ga = _tri_solve(xp, low, ga, upper=False, left=False, unit=False)
        return ga.astype(g.dtype, copy=False)

    def backward_graph(self, g):
        """``backward`` with Tensors: ``L^-T Phi(L^T gL) L^-1`` by two triangular solves."""
        out = self.saved_output(0, _mT(self.low) if self.upper else self.low)
        low, gl = (out.mT, g.mT) if self.upper else (out, g)
        t = (low.mT @ gl).tril()
        phi = 0.5 * (t + t.tril(-1).mT)
        ga = SolveTriangular.apply(low.mT, phi, upper=True)
        return SolveTriangular.apply(low, ga, upper=False, left=False)


class SolveTriangular(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, b, upper=False, left=True, unit=False):
        xp = get_array_module(a)
        self.a, self.upper, self.left, self.unit = a, upper, left, unit
        self.x = _tri_solve(xp, a, b, upper, left, unit).astype(np.result_type(a, b), copy=False)
        return self.x

    def backward(self, g):
        xp = get_array_module(g)
        a, x, upper, left, unit = self.a, self.x, self.upper, self.left, self.unit
        gb = _tri_solve(xp, _mT(a), g, not upper, left, unit)
        ga = None
        if self.needs_input_grad[0]:
            ga = -(gb @ _mT(x)) if left else -(_mT(x) @ gb)
            k = (1 if upper else -1) if unit else 0
            ga = xp.triu(ga, k) if upper else xp.tril(ga, k)
        return ga, (gb if self.needs_input_grad[1] else None)

    def backward_graph(self, g):
        upper, left, unit = self.upper, self.left, self.unit
        a_t, x = self.saved_input(0, self.a), self.saved_output(0, self.x)
        gb = SolveTriangular.apply(a_t.mT, g, upper=not upper, left=left, unit=unit)
        ga = None
        if self.needs_input_grad[0]:
            ga = -(gb @ x.mT) if left else -(x.mT @ gb)
            k = (1 if upper else -1) if unit else 0
            ga = ga.triu(k) if upper else ga.tril(k)
        return ga, (gb if self.needs_input_grad[1] else None)


def _check_square(t: Tensor, op: str, name: str = "A") -> None:
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are "
            f"{' by '.join(str(s) for s in t.shape[-2:]) if t.ndim >= 2 else tuple(t.shape)} "
            f"matrices (shape {tuple(t.shape)})"
        )
    if t.array.dtype.kind not in "f" or t.array.dtype.itemsize < 4:
        raise RuntimeError(
            f"{op}: not implemented for {t.dtype} (float32 and float64 only, as in PyTorch's CPU "
            "build); convert with .float() or .double() first"
        )


@register("linalg_cholesky")
def linalg_cholesky(A, *, upper: bool = False) -> Tensor:
    """``torch.linalg.cholesky``: ``L`` with ``A = L L^T`` (``U = L^T`` with ``upper=True``)."""
    A = as_tensor_arg(A)
    _check_square(A, "linalg.cholesky")
    return Cholesky.apply(A, upper=bool(upper))


@register("cholesky")
def cholesky(input, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch for ``torch.linalg.cholesky``)."""
    return linalg_cholesky(input, upper=upper)


@register("linalg_solve_triangular")
def linalg_solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """``torch.linalg.solve_triangular``: ``X`` with ``A X = B`` (``X A = B`` when
    ``left=False``), reading only the triangle of ``A`` that ``upper`` names."""
    A, B = as_tensor_arg(A), as_tensor_arg(B, "B")
    _check_square(A, "linalg.solve_triangular")
    if B.ndim < 2:
        raise RuntimeError(
            f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got "
            f"shape {tuple(B.shape)}; solve for a vector b with B = b.unsqueeze(-1)"
        )
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({tuple(A.shape)} and {tuple(B.shape)})"
        )
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"linalg.solve_triangular: Expected A and B to have the same dtype, but found "
            f"A of type {A.dtype} and B of type {B.dtype} instead"
        )
    return SolveTriangular.apply(A, B, upper=bool(upper), left=bool(left),
                                 unit=bool(unitriangular))


@register("cholesky_solve")
def cholesky_solve(B, L, upper: bool = False) -> Tensor:
    """``torch.cholesky_solve(B, L)``: ``X`` with ``(L L^T) X = B`` given the Cholesky
    factor (``U^T U`` with ``upper=True``), as two triangular solves."""
    L = as_tensor_arg(L, "L")
    if upper:
        y = linalg_solve_triangular(L.mT, B, upper=False)
        return linalg_solve_triangular(L, y, upper=True)
    y = linalg_solve_triangular(L, B, upper=False)
    return linalg_solve_triangular(L.mT, y, upper=True)


@register("cholesky_inverse")
def cholesky_inverse(L, upper: bool = False) -> Tensor:
    """``torch.cholesky_inverse(L)``: ``(L L^T)^-1`` from the Cholesky factor."""
    from .creation import eye

    L = as_tensor_arg(L, "L")
    _check_square(L, "cholesky_inverse", "L")
    return cholesky_solve(eye(L.shape[-1], dtype=L.dtype), L, upper=upper)
