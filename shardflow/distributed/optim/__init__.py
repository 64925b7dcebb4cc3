"""``shardflow.distributed.optim``: PyTorch's import path for ``ZeroRedundancyOptimizer``
(``torch.distributed.optim.ZeroRedundancyOptimizer``; it lives in ``distributed/zero.py``),
``DistributedOptimizer`` (``distributed/rpc/optimizer.py``) and ``PostLocalSGDOptimizer``
(``post_localSGD_optimizer.py``)."""

from ..rpc.optimizer import DistributedOptimizer
from ..zero import ZeroRedundancyOptimizer
from .post_localSGD_optimizer import PostLocalSGDOptimizer

__all__ = ["ZeroRedundancyOptimizer", "DistributedOptimizer", "PostLocalSGDOptimizer"]
