"""``shardflow.distributed.optim``: PyTorch's import path for ``ZeroRedundancyOptimizer``
(``torch.distributed.optim.ZeroRedundancyOptimizer``; it lives in ``distributed/zero.py``)
and ``DistributedOptimizer`` (``distributed/rpc/optimizer.py``)."""

from ..rpc.optimizer import DistributedOptimizer
from ..zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer", "DistributedOptimizer"]
