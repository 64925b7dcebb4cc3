"""``torch.distributed.tensor.placement_types``'s path: the sbp values (``sbp.py``)."""

from ..sbp import Partial, Placement, Replicate, Shard

__all__ = ["Placement", "Shard", "Replicate", "Partial"]
