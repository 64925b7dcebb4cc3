"""``torch.utils.data.dataloader``: ``DataLoader`` and its helpers (``shardflow/data/dataloader.py``)."""

from ...data.collate import default_collate, default_convert
from ...data.dataloader import DataLoader, WorkerInfo, get_worker_info

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info", "default_collate", "default_convert"]
