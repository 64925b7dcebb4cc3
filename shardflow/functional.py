"""``torch.functional``: the module torch defines a few tensor functions in (a re-export
module, no logic).

Programs import it by that path: the introyt "Building Models" tutorial has ``import
torch.functional as F``. Every name of torch 2.13's ``torch.functional.__all__`` is here and
is the same function as ``shardflow.<name>`` (the ops are in ``shardflow/ops/``). Like
torch's module it has no ``relu`` / ``max_pool2d``: those are ``torch.nn.functional``'s.
"""

from .ops.linalg_lowrank import pca_lowrank, svd_lowrank
from .ops.linalg_lu import lu
from .ops.linalg_ops import cdist, chain_matmul
from .ops.matmul import einsum
from .ops.reduce import norm
from .ops.search import unique, unique_consecutive
from .ops.shape import broadcast_tensors, meshgrid, split
from .ops.shape_extra import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    cartesian_prod,
    unravel_index,
)
from .ops.spectral import istft, stft
from .ops.tensor_products import tensordot

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
    "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index",
]
