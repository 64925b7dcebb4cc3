"""``torch.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``) and a
byte-counting process group (``counting.CountingProcessGroup``) to measure what they send.
"""

from . import counting, ddp_comm_hooks
from .counting import CountingProcessGroup

__all__ = ["ddp_comm_hooks", "counting", "CountingProcessGroup"]
