"""``shardflow.distributed.fsdp``: fully sharded data parallel (PyTorch FSDP2's names).

``fully_shard(module, mesh=None, reshard_after_forward=True, offload_policy=None)`` shards
``module``'s parameters along dim 0 over the data-parallel ranks (global tensors
``Split(0)``); ``reshard_after_forward=True`` is ZeRO stage 3, ``False`` stage 2; a 2-D
mesh ``("dp_replicate", "dp_shard")`` is hybrid sharding (HSDP). ``MixedPrecisionPolicy``
(PyTorch's fields: compute in ``param_dtype``, reduce in ``reduce_dtype``); a meta-device
model can be sharded and materialised later (``to_empty``). See
``fully_shard.py`` for the algorithm and communication plan, ``_param_group.py`` for the
layout and docs/ZERO.md.
"""

from .fully_shard import FSDPModule, fully_shard, sharded_optimizer_state_dict
from .mixed_precision import MixedPrecisionPolicy
from .offload import CPUOffloadPolicy, OffloadPolicy

__all__ = ["fully_shard", "FSDPModule", "CPUOffloadPolicy", "OffloadPolicy", "MixedPrecisionPolicy",
           "sharded_optimizer_state_dict"]
