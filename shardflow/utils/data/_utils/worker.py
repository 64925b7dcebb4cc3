"""``torch.utils.data._utils.worker``: ``get_worker_info`` and ``WorkerInfo``."""

from ....data.dataloader import WorkerInfo, get_worker_info  # noqa: F401

__all__ = ["WorkerInfo", "get_worker_info"]
