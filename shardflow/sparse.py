"""``torch.sparse``'s names that shardflow has (a re-export module, no logic): the
implementations are in ``shardflow/ops/sparse_coo.py``. ``FloatTensor``/``DoubleTensor`` are
PyTorch's legacy constructors (``torch.sparse.FloatTensor(indices, values, size)``)."""

from functools import partial

from .backend import dtypes
from .ops.sparse_coo import SparseTensor, sparse_float_tensor
from .ops.sparse_coo import sparse_mm as mm

FloatTensor = partial(sparse_float_tensor, dtype=dtypes.float32)
DoubleTensor = partial(sparse_float_tensor, dtype=dtypes.float64)

__all__ = ["mm", "FloatTensor", "DoubleTensor", "SparseTensor"]
