"""``torch.distributed._tensor``: PyTorch's older path of ``torch.distributed.tensor`` (still
used by its examples: ``from torch.distributed._tensor import Shard, Replicate``)."""

from ..tensor import (
    DeviceMesh,
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    distribute_module,
    distribute_tensor,
    empty,
    full,
    init_device_mesh,
    ones,
    rand,
    randn,
    zeros,
)

__all__ = [
    "DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
    "distribute_tensor", "empty", "full", "init_device_mesh", "ones", "rand", "randn", "zeros",
]
