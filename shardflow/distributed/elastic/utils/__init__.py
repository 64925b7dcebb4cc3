"""``torch.distributed.elastic.utils``: ``logging.get_logger`` (what scripts import) and ``data``
(``ElasticDistributedSampler``, ``CyclingIterator``)."""

from . import data, logging

__all__ = ["data", "logging"]
