"""``torch.cpu.amp.autocast_mode``: the module path of ``autocast`` (``shardflow.cpu.amp``'s)."""

from . import autocast

__all__ = ["autocast"]
