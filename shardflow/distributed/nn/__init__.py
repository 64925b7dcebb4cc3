"""``shardflow.distributed.nn``: PyTorch's import path for ``RemoteModule``
(``torch.distributed.nn.RemoteModule``); it lives in ``distributed/rpc/remote_module.py``."""

from .api.remote_module import RemoteModule

__all__ = ["RemoteModule"]
