"""``torch.distributed._composable``: PyTorch's "composable" APIs, applied to a module in place
(they add hooks; the module keeps its class name path and parameter names).

* ``fsdp`` — ``fully_shard`` and friends, the path torchtitan and the tutorials used before
  torch 2.6 moved FSDP2 to ``torch.distributed.fsdp``: re-exports of ``shardflow.distributed.fsdp``.
* ``replicate(module, ...)`` — data parallel by hooks (``replicate.py``: shardflow's DDP
  reducer, built at the first forward as torch builds its DDP).
* ``checkpoint(module)`` — composable activation checkpointing by saved-tensor hooks
  (``checkpoint_activation.py``: torch's non-reentrant algorithm).
"""

from . import checkpoint_activation, fsdp
from .checkpoint_activation import checkpoint
from .replicate import replicate

__all__ = ["checkpoint", "replicate", "fsdp"]
