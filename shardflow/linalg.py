"""``torch.linalg``'s names that shardflow has (a re-export module, no logic): the
implementations are ops in ``shardflow/ops/_linalg_names.py`` (over ``linalg_ops.py`` and
``reduce.py``), ``cholesky.py`` and ``tensor_products.py``; docs/COMPAT.md lists what is not
built."""

from .ops._linalg_names import (
    cross,
    det,
    diagonal,
    inv,
    inv_ex,
    matmul,
    matrix_norm,
    matrix_power,
    multi_dot,
    norm,
    slogdet,
    solve,
    solve_ex,
    vecdot,
    vector_norm,
)
from .ops.cholesky import LinAlgError
from .ops.cholesky import linalg_cholesky as cholesky
from .ops.cholesky import linalg_solve_triangular as solve_triangular

__all__ = ["cholesky", "cross", "det", "diagonal", "inv", "inv_ex", "matmul", "matrix_norm",
           "matrix_power", "multi_dot", "norm", "slogdet", "solve", "solve_ex", "solve_triangular",
           "vecdot", "vector_norm", "LinAlgError"]
