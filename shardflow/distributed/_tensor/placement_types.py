"""``torch.distributed._tensor.placement_types``'s path."""

from ..sbp import Partial, Placement, Replicate, Shard

__all__ = ["Placement", "Shard", "Replicate", "Partial"]
