"""``torch.linalg``'s names that shardflow has (a re-export module; its one wrapper gives
``slogdet`` torch's ``linalg_slogdet`` named tuple): the
implementations are ops in ``shardflow/ops/_linalg_names.py`` (over ``linalg_ops.py``,
``reduce.py``, ``decompositions.py``, ``linalg_derived.py``, ``linalg_lu.py``, ``linalg_eig.py``,
``linalg_householder.py``, ``linalg_ldl.py``), ``cholesky.py`` and
``tensor_products.py``; docs/COMPAT.md lists what is not built."""

from .ops._linalg_names import (
    cholesky,
    cholesky_ex,
    cond,
    cross,
    det,
    diagonal,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    householder_product,
    inv,
    inv_ex,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lstsq,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matmul,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    solve,
    solve_ex,
    solve_triangular,
    svd,
    svdvals,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
    vector_norm,
)
from .ops._linalg_names import (
    slogdet as _slogdet,
)
from .ops.cholesky import LinAlgError
from .ops.reduce import return_types


def slogdet(A):
    """``torch.linalg.slogdet``: ``torch.slogdet``'s ``(sign, logabsdet)``, as the
    ``linalg_slogdet`` named tuple torch's linalg form returns."""
    return return_types.linalg_slogdet(*_slogdet(A))

__all__ = ["cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "inv",
           "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm", "LinAlgError"]
