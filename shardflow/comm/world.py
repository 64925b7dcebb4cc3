"""The process's world: launch detection and the default communicator (the factory).

* :func:`init` picks the backend from how the process was started
  (``_config.launch_info()``): under mpiexec / Slurm it initialises MPI and builds an
  :class:`~shardflow.comm.mpi.MPICommunicator` over ``COMM_WORLD``; a plain ``python``
  process gets the world of one (no MPI import at all). torchrun-style ``RANK`` /
  ``WORLD_SIZE`` with ``WORLD_SIZE > 1`` is refused with a message, because shardflow's
  CPU transport is MPI, which needs its own launcher. Backend ``"nccl"`` builds a
  :class:`~shardflow.comm.nccl.NCCLCommunicator` over that world (device arrays through
  NCCL, the rest through MPI) when CuPy sees a CUDA device; without one it runs on MPI as
  ``"gloo"`` does, with a one-time note on rank 0.
* :func:`init` hands the world to the failure policy (``failure.install``): the rank its
  reports name, the communicator ``abort_job`` aborts, and, when the world has more than
  one rank, the ``sys.excepthook`` that ends the whole job on an uncaught exception
  (``failure.py``). The backends report through ``failure`` and never import this module.
* :func:`world_info` is what lower-level consumers (the DataLoader's automatic sharding)
  ask: rank, world size, whether a world is initialised and whether data parallel wrapped
  a model (:func:`set_data_parallel`).
* The data-parallel flag (:func:`set_data_parallel`, :func:`data_parallel_active`) is the
  process's one answer to "is a model trained data-parallel here" (so each rank reads its
  own share of the data): set by ``DistributedDataParallel`` and ``fully_shard``, read by
  the DataLoader (``data/_world.py``) and GradScaler (through :func:`world_info`); it lives
  here, the lowest layer both sides import.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .. import _config
from ..backend.xp import cuda_is_available
from . import failure, mpi_exit
from .base import Communicator
from .local import LocalCommunicator

_world: Communicator | None = None
_data_parallel = False


@dataclass(frozen=True)
class WorldInfo:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    initialized: bool
    data_parallel: bool
    launcher: str


def init(backend: str | None = None, init_timeout: float | None = None) -> Communicator:
    """Create (once) and return the world communicator; see the module docstring.

    ``init_timeout`` (seconds; ``init_process_group``'s ``timeout=``) bounds the start of an
    MPI world instead of ``SHARDFLOW_COMM_TIMEOUT`` (``mpi_init.py``)."""
    global _world
    if _world is not None:
        return _world
    _config.debug_flags()  # an unknown SHARDFLOW_DEBUG flag fails here, on every backend
    info = _config.launch_info()
    want = (backend or "auto").lower()
    nccl = want in ("nccl", "cuda")
    if nccl and not cuda_is_available():
        # torchrun-style scripts ask for nccl; on a machine without a GPU run them on MPI
        # (as 'gloo' does) rather than refuse them, and say so once, on rank 0
        _note_once(info.rank, f"shardflow: init with backend {backend!r}: no CUDA device here "
                   "(CuPy sees none), so the collectives run over MPI on CPU, as with 'gloo' "
                   "(same results)\n")
        want, nccl = "gloo", False
    elif nccl:
        want = "auto"
    if want not in ("auto", "mpi", "gloo", "local", "none"):
        raise ValueError(f"unknown backend {backend!r}; expected 'mpi', 'gloo', 'nccl' or None")
    if info.launcher == "torchrun" and info.world_size > 1 and want != "local":
        raise RuntimeError(
            f"this process was started with RANK={info.rank} WORLD_SIZE={info.world_size} "
            "(torchrun style), but shardflow's CPU transport is MPI and needs MPI's launcher. "
            f"Start the script with `shardflow run -n {info.world_size} script.py` instead."
        )
    if want == "local" or (info.launcher == "none" and want == "auto"):
        comm = LocalCommunicator()
    else:
        from .mpi import MPICommunicator

        comm = MPICommunicator(init_timeout=init_timeout)
        if info.launcher in ("mpiexec", "slurm") and comm.size != info.world_size:
            raise RuntimeError(
                f"the launcher says WORLD_SIZE={info.world_size} but MPI sees {comm.size} ranks; "
                "the MPI library that runs this Python does not match the launcher. Start with "
                "`shardflow run -n N` (it uses the mpiexec next to this Python)."
            )
    if nccl:
        from .nccl import NCCLCommunicator

        comm = NCCLCommunicator(comm)  # device arrays over NCCL; the rest over ``comm``
    _world = comm
    failure.install(comm)  # with more than one rank: the excepthook that aborts the job
    return _world


_noted: set[str] = set()


def _note_once(rank: int, text: str) -> None:
    if rank == 0 and text not in _noted:
        _noted.add(text)
        sys.stderr.write(text)
        sys.stderr.flush()


def get_world() -> Communicator:
    """The world communicator, initialising it on first use."""
    return _world if _world is not None else init()


def is_initialized() -> bool:
    return _world is not None


def destroy() -> None:
    """Forget the world (MPI itself is finalised at interpreter exit by mpi4py)."""
    global _world, _data_parallel
    if _world is not None:
        _world.free()
    _world = None
    _data_parallel = False
    mpi_exit.DATA_PARALLEL[0] = False
    failure.uninstall()


def set_data_parallel(flag: bool = True) -> None:
    """Data parallel announces itself so that DataLoaders shard their data automatically."""
    global _data_parallel
    _data_parallel = bool(flag)
    mpi_exit.DATA_PARALLEL[0] = _data_parallel


def data_parallel_active() -> bool:
    """Whether data parallel announced itself (:func:`set_data_parallel`), world or not."""
    return _data_parallel


def world_info() -> WorldInfo:
    """Where this process stands, without initialising anything."""
    info = _config.launch_info()
    if _world is None:
        return WorldInfo(0, 1, 0, 1, False, False, info.launcher)
    return WorldInfo(_world.rank, _world.size, info.local_rank, info.local_world_size, True,
                     _data_parallel, info.launcher)
