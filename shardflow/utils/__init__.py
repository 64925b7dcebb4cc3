"""PyTorch's ``torch.utils`` paths: ``shardflow.utils.data`` and ``shardflow.utils.checkpoint``."""

from . import checkpoint, data
