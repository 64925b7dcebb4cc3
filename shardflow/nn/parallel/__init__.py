"""``shardflow.nn.parallel``: ``DistributedDataParallel``, ``SyncBatchNorm`` and
``DataParallel`` (a one-process pass-through, ``data_parallel.py``), and its primitives
``scatter`` / ``gather`` / ``replicate`` / ``parallel_apply`` / ``data_parallel``
(``primitives.py``; ``data_parallel`` is the function here, as in PyTorch, and
``nn.parallel.data_parallel`` the module by its import path)."""

from .data_parallel import DataParallel
from .primitives import data_parallel, gather, parallel_apply, replicate, scatter
from .sync_batchnorm import SyncBatchNorm

convert_sync_batchnorm = SyncBatchNorm.convert_sync_batchnorm

__all__ = ["DistributedDataParallel", "DDP", "SyncBatchNorm", "convert_sync_batchnorm", "DataParallel",
           "scatter", "gather", "replicate", "parallel_apply", "data_parallel"]


# DDP (its reducer, buckets, join) loads on first use (PEP 562): every ``import shardflow``
# imports nn.parallel for SyncBatchNorm, few processes wrap a model in DDP.
_LAZY_SUBMODULES = frozenset({"autograd_walk", "distributed", "grad_bucket", "join", "reducer"})
_DDP_NAMES = frozenset({"DistributedDataParallel", "DDP"})


def __getattr__(name):
    from importlib import import_module

    if name in _LAZY_SUBMODULES:
        return import_module(f"{__name__}.{name}")  # the import binds it here too
    if name in _DDP_NAMES:
        value = import_module(f"{__name__}.distributed").DistributedDataParallel
        globals().update(DistributedDataParallel=value, DDP=value)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_SUBMODULES | _DDP_NAMES)
