"""``torch.sparse``'s names that shardflow has (a re-export module, no logic): the
implementations are in ``shardflow/ops/sparse_coo.py`` and ``ops/sparse_reductions.py``
(``softmax``, ``log_softmax``, ``sum``, ``addmm``, ``spdiags``,
``check_sparse_tensor_invariants``). ``FloatTensor``/``DoubleTensor`` are
PyTorch's legacy constructors (``torch.sparse.FloatTensor(indices, values, size)``)."""

from functools import partial

from .backend import dtypes
from .ops.sparse_coo import SparseTensor, sparse_float_tensor
from .ops.sparse_coo import sparse_mm as mm
from .ops.sparse_reductions import check_sparse_tensor_invariants, spdiags
from .ops.sparse_reductions import sparse_addmm as addmm
from .ops.sparse_reductions import sparse_log_softmax as log_softmax
from .ops.sparse_reductions import sparse_softmax as softmax
from .ops.sparse_reductions import sparse_sum as sum  # noqa: A004 (torch.sparse.sum)

FloatTensor = partial(sparse_float_tensor, dtype=dtypes.float32)
DoubleTensor = partial(sparse_float_tensor, dtype=dtypes.float64)

__all__ = ["mm", "FloatTensor", "DoubleTensor", "SparseTensor", "addmm", "log_softmax", "softmax",
           "sum", "spdiags", "check_sparse_tensor_invariants"]
