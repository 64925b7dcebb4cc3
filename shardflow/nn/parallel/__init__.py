"""``shardflow.nn.parallel``: ``DistributedDataParallel``, ``SyncBatchNorm`` and
``DataParallel`` (a one-process pass-through, ``data_parallel.py``), and its primitives
``scatter`` / ``gather`` / ``replicate`` / ``parallel_apply`` / ``data_parallel``
(``primitives.py``; ``data_parallel`` is the function here, as in PyTorch, and
``nn.parallel.data_parallel`` the module by its import path)."""

from ..._lazy import lazy_attributes
from .data_parallel import DataParallel
from .parallel_apply import parallel_apply  # torch's files; the names bound after them, as in torch
from .primitives import data_parallel
from .replicate import replicate
from .scatter_gather import gather, scatter
from .sync_batchnorm import SyncBatchNorm

convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm

__all__ = ["DistributedDataParallel", "DDP", "SyncBatchNorm", "convert_sync_batchnorm", "DataParallel",
           "scatter", "gather", "replicate", "parallel_apply", "data_parallel"]


# DDP (its reducer, buckets, join) loads on first use (PEP 562): every ``import shardflow``
# imports nn.parallel for SyncBatchNorm, few processes wrap a model in DDP.
__getattr__, __dir__ = lazy_attributes(
    __name__, globals(), submodules={"autograd_walk", "distributed", "grad_bucket", "join", "reducer"},
    names={"DistributedDataParallel": ("distributed", "DistributedDataParallel"),
           "DDP": ("distributed", "DistributedDataParallel")})
