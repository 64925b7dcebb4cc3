"""``shardflow.distributed.fsdp``: fully sharded data parallel (PyTorch FSDP2's names).

``fully_shard(module, mesh=None, reshard_after_forward=True, offload_policy=None)`` shards
``module``'s parameters along dim 0 over the data-parallel ranks (global tensors
``Split(0)``); ``reshard_after_forward=True`` is ZeRO stage 3, ``False`` stage 2; a 2-D
mesh ``("dp_replicate", "dp_shard")`` is hybrid sharding (HSDP). ``MixedPrecisionPolicy``
(PyTorch's fields: compute in ``param_dtype``, reduce in ``reduce_dtype``); a meta-device
model can be sharded and materialised later (``to_empty``). See
``fully_shard.py`` for the algorithm and communication plan, ``_param_group.py`` for the
layout and docs/ZERO.md. PyTorch's FSDP1 API (``FullyShardedDataParallel``, its enums and
configs, ``fsdp.wrap``'s policies) is a wrapper module over ``fully_shard``
(``fully_sharded_data_parallel.py``).
"""

from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    OptimStateDictConfig,
    OptimStateKeyType,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictSettings,
    StateDictType,
)
from .forward_method import register_fsdp_forward_method
from .fully_shard import FSDPModule, fully_shard, sharded_optimizer_state_dict
from .fully_sharded_data_parallel import FullyShardedDataParallel
from .mixed_precision import MixedPrecisionPolicy
from .offload import CPUOffloadPolicy, OffloadPolicy

__all__ = ["fully_shard", "FSDPModule", "register_fsdp_forward_method", "CPUOffloadPolicy", "OffloadPolicy", "MixedPrecisionPolicy",
           "sharded_optimizer_state_dict",
           # FSDP1 (PyTorch's FullyShardedDataParallel API over fully_shard; docs/ZERO.md "FSDP1")
           "FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "MixedPrecision",
           "CPUOffload", "StateDictType", "StateDictConfig", "FullStateDictConfig",
           "LocalStateDictConfig", "ShardedStateDictConfig", "OptimStateDictConfig",
           "FullOptimStateDictConfig", "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig",
           "StateDictSettings", "OptimStateKeyType"]
