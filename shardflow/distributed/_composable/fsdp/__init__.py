"""``torch.distributed._composable.fsdp``: FSDP2's pre-2.6 path (re-exports of
``shardflow.distributed.fsdp``: the same objects, as in torch 2.13). As in torch, the name
``fully_shard`` here is the function, though a submodule of that name exists (it is imported
first, then the function rebinds the name)."""

# ruff: noqa: I001
from . import fully_shard as _fully_shard_module
from ...fsdp import (
    CPUOffloadPolicy,
    FSDPModule,
    MixedPrecisionPolicy,
    OffloadPolicy,
    fully_shard,
    register_fsdp_forward_method,
)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard",
           "register_fsdp_forward_method"]
