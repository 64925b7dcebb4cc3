"""``shardflow.distributed.optim``: PyTorch's import path for ``ZeroRedundancyOptimizer``
(``torch.distributed.optim.ZeroRedundancyOptimizer``); it lives in ``distributed/zero.py``."""

from ..zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
