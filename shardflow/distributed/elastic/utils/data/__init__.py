"""``torch.distributed.elastic.utils.data``: ``ElasticDistributedSampler`` (a
``DistributedSampler`` that starts at ``start_index``, for resuming mid-epoch) and
``CyclingIterator`` (an iterator that runs a generator function for ``n`` epochs)."""

from .cycling_iterator import CyclingIterator
from .elastic_distributed_sampler import ElasticDistributedSampler

__all__ = ["CyclingIterator", "ElasticDistributedSampler"]
