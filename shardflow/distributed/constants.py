"""``torch.distributed.constants``: ``default_pg_timeout`` (torch's 30 minutes, the object
``shardflow.distributed`` has; a group made without ``timeout=`` waits ``SHARDFLOW_COMM_TIMEOUT``
here, see ``init_process_group``) and ``default_pg_nccl_timeout`` (None, as in a torch build
without NCCL)."""

from . import default_pg_timeout

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

default_pg_nccl_timeout = None
