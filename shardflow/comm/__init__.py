"""Collectives on raw arrays (layer L2): the ``Communicator`` interface and its backends.

``base`` (interface, ReduceOp, Work), ``local`` (world of one), ``mpi`` (the MPI
communicator; ``mpi_lib`` is the only module importing mpi4py; ``mpi_collectives``,
``mpi_p2p``, ``mpi_plans``, ``mpi_work``, ``mpi_exit``), ``callsig`` and ``arrival`` (the
checked calls and the failure reports), ``world`` (launch detection, default
communicator), ``failure`` (the failure policy: abort the job, root-cause records, the
excepthook). See docs/DISTRIBUTED.md.
"""

from .base import CommError, CommTimeoutError, Communicator, CompletedWork, ReduceOp, Work
from .failure import abort_job
from .local import LocalCommunicator
from .world import (
    WorldInfo,
    data_parallel_active,
    destroy,
    get_world,
    init,
    is_initialized,
    set_data_parallel,
    world_info,
)

__all__ = [
    "CommError", "CommTimeoutError", "Communicator", "CompletedWork", "LocalCommunicator",
    "ReduceOp", "Work", "WorldInfo", "abort_job", "data_parallel_active", "destroy", "get_world", "init",
    "is_initialized", "set_data_parallel", "world_info",
]
