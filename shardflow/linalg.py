"""``torch.linalg``'s names that shardflow has (a re-export module, no logic): the
implementations are ops in ``shardflow/ops/_linalg_names.py`` (over ``linalg_ops.py``,
``reduce.py``, ``decompositions.py`` and ``linalg_derived.py``), ``cholesky.py`` and
``tensor_products.py``; docs/COMPAT.md lists what is not built."""

from .ops._linalg_names import (
    cholesky,
    cholesky_ex,
    cond,
    cross,
    det,
    diagonal,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
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
    slogdet,
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
from .ops.cholesky import LinAlgError

__all__ = ["cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm", "LinAlgError"]
