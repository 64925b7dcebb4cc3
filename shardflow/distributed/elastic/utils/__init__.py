"""``torch.distributed.elastic.utils``: ``logging.get_logger`` (what scripts import)."""

from . import logging

__all__ = ["logging"]
