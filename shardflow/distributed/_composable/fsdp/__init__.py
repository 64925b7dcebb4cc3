"""``torch.distributed._composable.fsdp``: FSDP2's pre-2.6 path (re-exports of
``shardflow.distributed.fsdp``: the same objects, as in torch 2.13)."""

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
