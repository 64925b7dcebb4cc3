"""``shardflow.nn.parallel``: ``DistributedDataParallel``, ``SyncBatchNorm`` and
``DataParallel`` (a one-process pass-through, ``data_parallel.py``), and its primitives
``scatter`` / ``gather`` / ``replicate`` / ``parallel_apply`` / ``data_parallel``
(``primitives.py``; ``data_parallel`` is the function here, as in PyTorch, and
``nn.parallel.data_parallel`` the module by its import path)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel
from .primitives import data_parallel, gather, parallel_apply, replicate, scatter
from .sync_batchnorm import SyncBatchNorm

DDP = DistributedDataParallel
convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm

__all__ = ["DistributedDataParallel", "DDP", "SyncBatchNorm", "convert_sync_batchnorm", "DataParallel",
           "scatter", "gather", "replicate", "parallel_apply", "data_parallel"]
