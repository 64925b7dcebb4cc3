"""``torch.distributed._composable.fsdp.fully_shard``: the module path of FSDP2's names before
torch 2.6 (re-exports of ``shardflow.distributed.fsdp``)."""

from ...fsdp import FSDPModule, fully_shard, register_fsdp_forward_method

__all__ = ["FSDPModule", "fully_shard", "register_fsdp_forward_method"]
