"""``torch.distributed.optim.zero_redundancy_optimizer``: the module path of
``ZeroRedundancyOptimizer`` (``distributed/zero.py``)."""

from ..zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
