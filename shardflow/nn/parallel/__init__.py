"""``shardflow.nn.parallel``: ``DistributedDataParallel`` and ``SyncBatchNorm``."""

from .distributed import DistributedDataParallel
from .sync_batchnorm import SyncBatchNorm

DDP = DistributedDataParallel
convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm

__all__ = ["DistributedDataParallel", "DDP", "SyncBatchNorm", "convert_sync_batchnorm"]
