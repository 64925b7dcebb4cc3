"""FSDP1's configuration types (PyTorch's ``torch.distributed.fsdp.api``): the enums and
dataclasses that ``FullyShardedDataParallel`` and its state-dict methods take, with
PyTorch's fields and defaults. What each setting does in shardflow is in
``fully_sharded_data_parallel.py`` and docs/ZERO.md ("FSDP1").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto

from ...nn.modules.batchnorm import _BatchNorm

__all__ = [
    "ShardingStrategy", "BackwardPrefetch", "MixedPrecision", "CPUOffload", "StateDictType",
    "StateDictConfig", "FullStateDictConfig", "LocalStateDictConfig", "ShardedStateDictConfig",
    "OptimStateDictConfig", "FullOptimStateDictConfig", "LocalOptimStateDictConfig",
    "ShardedOptimStateDictConfig", "StateDictSettings", "OptimStateKeyType",
]


class ShardingStrategy(Enum):
    """``FULL_SHARD``: ZeRO-3 (parameters resharded after each unit's forward);
    ``SHARD_GRAD_OP``: ZeRO-2 (kept gathered until backward); ``NO_SHARD``: DDP (every rank
    holds whole parameters, gradients all-reduced); ``HYBRID_SHARD``: FULL_SHARD inside a
    node, replicated across nodes; ``_HYBRID_SHARD_ZERO2``: the same with SHARD_GRAD_OP."""

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """When the next unit's all-gather starts in backward (accepted; shardflow's units
    prefetch the next one as their gradients arrive, see fully_shard.py)."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


@dataclass
class MixedPrecision:
    """FSDP1's mixed precision: parameters gathered and computed in ``param_dtype``,
    gradients reduced in ``reduce_dtype``, buffers cast to ``buffer_dtype``; the root's
    floating inputs cast to ``param_dtype`` (``cast_root_forward_inputs``), every unit's
    with ``cast_forward_inputs``. Mapped onto FSDP2's ``MixedPrecisionPolicy``."""

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: Sequence = (_BatchNorm,)


@dataclass
class CPUOffload:
    """``offload_params=True``: shards, gradients and optimizer state in host memory
    (FSDP2's ``CPUOffloadPolicy``; a no-op on the CPU backend)."""

    offload_params: bool = False


class StateDictType(Enum):
    """What ``state_dict()`` of an FSDP model returns: ``FULL_STATE_DICT`` whole tensors,
    ``SHARDED_STATE_DICT`` global tensors ``S(0)`` (DTensor-like, for distributed
    checkpoints), ``LOCAL_STATE_DICT`` (shardflow: the same as SHARDED)."""

    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """``rank0_only=True``: rank 0 gets the whole state, the others ``{}``."""

    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


class OptimStateKeyType(Enum):
    """How ``FSDP.rekey_optim_state_dict`` keys the optimizer state: by parameter name or by
    the parameter's position (``optimizer.state_dict()``'s ids)."""

    PARAM_NAME = auto()
    PARAM_ID = auto()
