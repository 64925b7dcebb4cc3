"""``torch.utils.data.distributed``: ``DistributedSampler`` (``shardflow/data/sampler.py``)."""

from ...data.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
