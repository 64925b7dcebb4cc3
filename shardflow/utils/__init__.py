"""PyTorch's ``torch.utils`` paths: ``shardflow.utils.data``, ``shardflow.utils.checkpoint`` and
``shardflow.utils.dlpack``."""

from . import checkpoint, data, dlpack
