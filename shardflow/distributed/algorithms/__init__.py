"""``torch.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``), model
averaging for post-local SGD (``model_averaging``), ``Join`` for uneven inputs (``join``) and a byte-counting process group
(``counting.CountingProcessGroup``) to measure what the hooks send.
"""

from . import counting, ddp_comm_hooks, join, model_averaging
from .counting import CountingProcessGroup
from .join import Join, Joinable, JoinHook

__all__ = ["ddp_comm_hooks", "model_averaging", "counting", "CountingProcessGroup", "join",
           "Join", "JoinHook", "Joinable"]
