"""``shardflow.distributed.optim``: PyTorch's import path for ``ZeroRedundancyOptimizer``
(``torch.distributed.optim.ZeroRedundancyOptimizer``; it lives in ``distributed/zero.py``),
``DistributedOptimizer`` (``distributed/rpc/optimizer.py``), ``PostLocalSGDOptimizer``
(``post_localSGD_optimizer.py``) and ``_apply_optimizer_in_backward`` /
``_get_in_backward_optimizers`` (``apply_optimizer_in_backward.py``)."""

from ..rpc.optimizer import DistributedOptimizer
from ..zero import ZeroRedundancyOptimizer
from .apply_optimizer_in_backward import _apply_optimizer_in_backward, _get_in_backward_optimizers
from .post_localSGD_optimizer import PostLocalSGDOptimizer

__all__ = ["ZeroRedundancyOptimizer", "DistributedOptimizer", "PostLocalSGDOptimizer"]
