"""``shardflow.nn.parallel``: ``DistributedDataParallel``, ``SyncBatchNorm`` and
``DataParallel`` (a one-process pass-through, ``data_parallel.py``)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel
from .sync_batchnorm import SyncBatchNorm

DDP = DistributedDataParallel
convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm

__all__ = ["DistributedDataParallel", "DDP", "SyncBatchNorm", "convert_sync_batchnorm", "DataParallel"]
