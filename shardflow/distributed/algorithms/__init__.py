"""``torch.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``), model
averaging for post-local SGD (``model_averaging``) and a byte-counting process group
(``counting.CountingProcessGroup``) to measure what the hooks send.
"""

from . import counting, ddp_comm_hooks, model_averaging
from .counting import CountingProcessGroup

__all__ = ["ddp_comm_hooks", "model_averaging", "counting", "CountingProcessGroup"]
