"""Collectives on raw arrays (layer L2): the ``Communicator`` interface and its backends.

``base`` (interface, ReduceOp, Work), ``local`` (world of one), ``mpi`` (mpi4py, the only
module importing it), ``world`` (launch detection, default communicator, failure
handling). See docs/DISTRIBUTED.md.
"""

from .base import CommError, CommTimeoutError, Communicator, CompletedWork, ReduceOp, Work
from .local import LocalCommunicator
from .world import (
    WorldInfo,
    abort_job,
    destroy,
    get_world,
    init,
    is_initialized,
    set_data_parallel,
    world_info,
)

__all__ = [
    "CommError", "CommTimeoutError", "Communicator", "CompletedWork", "LocalCommunicator",
    "ReduceOp", "Work", "WorldInfo", "abort_job", "destroy", "get_world", "init",
    "is_initialized", "set_data_parallel", "world_info",
]
