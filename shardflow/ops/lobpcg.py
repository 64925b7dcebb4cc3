"""``torch.lobpcg``: the ``k`` largest (or smallest) eigenpairs of a symmetric positive
definite ``A``, or of the generalized problem ``A x = lambda B x``.

torch runs LOBPCG, an iterative method, until the residuals are below ``tol``; shardflow
solves the problem exactly with a dense symmetric eigensolver (``linalg.eigh``; with ``B``,
the Cholesky reduction ``L^-1 A L^-T``), which is the point the iteration converges to. So
``X`` (the initial guess) only sets ``k``, and ``n``, ``iK``, ``niter``, ``tol`` and ``method``
(which steer torch's iteration) have nothing left to change; ``tracker`` and the ``ortho_*``
parameters (hooks into the iteration) raise NotImplementedError. Returns ``(E, X)``: ``E``
``(..., k)`` in decreasing order when ``largest`` (the default), increasing otherwise, and the
eigenvectors ``X`` ``(..., m, k)`` (each column's sign is the solver's). Differentiable in
``A`` (and ``B``) through ``eigh``'s backward; torch's own backward also takes only dense
inputs. ``A`` with fewer than ``3 n`` rows raises torch's ValueError.

Not an op (not a Tensor method in torch): the top-level package re-exports it.
"""

from __future__ import annotations

from .cholesky import linalg_cholesky, linalg_solve_triangular
from .decompositions import linalg_eigh

__all__: list[str] = []  # torch.lobpcg is re-exported by the top-level package


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """``torch.lobpcg``: ``(E, X)``, the ``k`` extreme eigenpairs (see the module docstring)."""
    for name, value in (("tracker", tracker), ("ortho_iparams", ortho_iparams), ("ortho_fparams", ortho_fparams),
                        ("ortho_bparams", ortho_bparams)):
        if value is not None:
            raise NotImplementedError(
                f"lobpcg: {name} hooks into torch's LOBPCG iteration, which shardflow does not run (it solves the "
                f"eigenproblem exactly); expected {name}=None")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    if k is None:
        k = 1 if X is None else X.shape[-1]
    n = k if n is None else n
    m = A.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest
    if B is None:
        evals, evecs = linalg_eigh(A)
    else:
        L = linalg_cholesky(B)
        half = linalg_solve_triangular(L, A, upper=False)  # L^-1 A
        C = linalg_solve_triangular(L, half.mT, upper=False)  # L^-1 A L^-T (A symmetric)
        evals, V = linalg_eigh(C)
        evecs = linalg_solve_triangular(L.mT, V, upper=True)  # x = L^-T v
    if largest:
        return evals[..., m - k:].flip(-1), evecs[..., m - k:].flip(-1)
    return evals[..., :k], evecs[..., :k]
