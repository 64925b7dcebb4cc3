"""``torch.nn.modules.module`` path: the Module base class lives in ``shardflow.nn.module``."""

from ..module import Module, RemovableHandle, _addindent, _IncompatibleKeys  # noqa: F401 (torch's path)

__all__ = ["Module", "RemovableHandle"]
