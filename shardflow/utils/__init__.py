"""PyTorch's ``torch.utils`` paths: ``shardflow.utils.data`` and ``shardflow.utils.checkpoint``;
``shardflow.utils.tensorboard`` is imported on request, as ``torch.utils.tensorboard`` is."""

from . import checkpoint, data
