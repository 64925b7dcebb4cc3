"""``torch.cuda.amp.autocast_mode``: the module path of ``autocast``, ``custom_fwd`` and
``custom_bwd`` (the objects of ``shardflow.cuda.amp``, deprecated as torch's)."""

from . import autocast, custom_bwd, custom_fwd

__all__ = ["autocast", "custom_fwd", "custom_bwd"]
