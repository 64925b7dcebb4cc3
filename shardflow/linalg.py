"""``torch.linalg``'s names that shardflow has (a re-export module, no logic): the
implementations are ops in ``shardflow/ops/cholesky.py`` and ``tensor_products.py``."""

from .ops.cholesky import LinAlgError
from .ops.cholesky import linalg_cholesky as cholesky
from .ops.cholesky import linalg_solve_triangular as solve_triangular
from .ops.tensor_products import linalg_cross as cross

__all__ = ["cholesky", "cross", "solve_triangular", "LinAlgError"]
