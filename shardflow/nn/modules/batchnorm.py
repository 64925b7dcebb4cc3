"""``torch.nn.modules.batchnorm`` path: the BatchNorm layers and their bases, defined in
``normalization.py`` (``_NormBase`` / ``_BatchNorm`` are the same classes, so ``isinstance``
checks such as a weight-decay filter's ``isinstance(m, _BatchNorm)`` hold)."""

from ..parallel.sync_batchnorm import SyncBatchNorm
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "_BatchNorm", "_NormBase", "Module"]
