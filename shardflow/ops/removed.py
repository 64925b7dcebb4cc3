"""Functions torch removed in 1.9 but keeps under their old names only to raise a message
naming the replacement: ``torch.matrix_rank``, ``solve``, ``lstsq``, ``eig``, ``symeig`` and
the Tensor methods ``solve`` / ``lstsq`` / ``eig`` / ``symeig``. A program written for an old
torch gets torch 2.13's exact ``RuntimeError`` text (from ``torch/_linalg_utils.py``), which
says what to call instead (``shardflow.linalg`` has each replacement).
"""

from __future__ import annotations

from ..autograd.dispatch import register

__all__ = ["matrix_rank", "solve", "lstsq", "eig", "symeig"]

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "


def matrix_rank(input, tol=None, symmetric=False):
    """Removed: use ``linalg.matrix_rank`` (``symmetric`` is now ``hermitian``)."""
    raise RuntimeError(
        _REMOVED.rstrip() + "\nPlease use the `torch.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."
    )


@register("solve")
def solve(input, A):
    """Removed: use ``linalg.solve(A, B)`` (arguments reversed)."""
    raise RuntimeError(
        _REMOVED + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU factorization.\n\n"
        "To get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution should be replaced with:\n"
        "X = torch.linalg.solve(A, B)"
    )


@register("lstsq")
def lstsq(input, A):
    """Removed: use ``linalg.lstsq(A, B).solution`` (arguments reversed)."""
    raise RuntimeError(
        _REMOVED + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
        "the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, "
        "the residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\n"
        "X, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\n"
        "X = torch.linalg.lstsq(A, B).solution"
    )


@register("symeig")
def symeig(input, eigenvectors=False, upper=True):
    """Removed: use ``linalg.eigvalsh`` / ``linalg.eigh`` (default triangle now the lower)."""
    raise RuntimeError(
        _REMOVED + "The default behavior has changed from using the upper triangular portion of the matrix "
        "by default to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\n"
        "and\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
    )


@register("eig")
def eig(self, eigenvectors=False, *, e=None, v=None):
    """Removed: use ``linalg.eigvals`` / ``linalg.eig`` (complex results)."""
    raise RuntimeError(
        _REMOVED + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
        "real tensors mimicking complex tensors.\n\n"
        "L, _ = torch.eig(A) should be replaced with:\n"
        "L_complex = torch.linalg.eigvals(A)\n\n"
        "and\n\n"
        "L, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)"
    )
