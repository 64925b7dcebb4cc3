"""``torch.distributed.optim.optimizer``: the module path of ``DistributedOptimizer`` (RPC's,
``distributed/rpc/optimizer.py``)."""

from ..rpc.optimizer import DistributedOptimizer

__all__ = ["DistributedOptimizer"]
