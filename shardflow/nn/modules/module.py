"""``torch.nn.modules.module`` path: the Module base class lives in ``shardflow.nn.module``."""

from ..module import Module, RemovableHandle

__all__ = ["Module", "RemovableHandle"]
