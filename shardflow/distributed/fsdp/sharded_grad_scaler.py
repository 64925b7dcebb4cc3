"""``ShardedGradScaler`` (PyTorch's ``torch.distributed.fsdp.sharded_grad_scaler``): the loss
scaler FSDP1 scripts use with float16 mixed precision.

shardflow's ``GradScaler`` already does what PyTorch's sharded one adds: each rank unscales
its gradient shards (global tensors: the local arrays) and checks them for inf/NaN, and the
found-inf flags are all-reduced (``MAX``) over ``process_group`` (default: every rank, as
``dist.group.WORLD``), so every rank skips the same steps (shardflow/amp/grad_scaler.py).
This class takes PyTorch's constructor (its argument order differs from ``GradScaler``'s).
"""

from __future__ import annotations

from ...amp.grad_scaler import GradScaler

__all__ = ["ShardedGradScaler"]


class ShardedGradScaler(GradScaler):
    """``GradScaler`` with the found-inf flags all-reduced over ``process_group`` (default:
    every rank)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, backoff_factor: float = 0.5,
                 growth_factor: float = 2.0, growth_interval: int = 2000, enabled: bool = True,
                 process_group=None) -> None:
        if process_group is None:
            from ... import comm as _comm

            if _comm.is_initialized() and _comm.get_world().size > 1:
                process_group = _comm.get_world()
        super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled, process_group=process_group)
