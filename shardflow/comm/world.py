"""The process's world: launch detection, the default communicator, failure handling.

* :func:`init` picks the backend from how the process was started
  (``_config.launch_info()``): under mpiexec / Slurm it initialises MPI and builds an
  :class:`~shardflow.comm.mpi.MPICommunicator` over ``COMM_WORLD``; a plain ``python``
  process gets the world of one (no MPI import at all). torchrun-style ``RANK`` /
  ``WORLD_SIZE`` with ``WORLD_SIZE > 1`` is refused with a message, because shardflow's
  CPU transport is MPI, which needs its own launcher. Backend ``"nccl"`` builds a
  :class:`~shardflow.comm.nccl.NCCLCommunicator` over that world (device arrays through
  NCCL, the rest through MPI) when CuPy sees a CUDA device; without one it runs on MPI as
  ``"gloo"`` does, with a one-time note on rank 0.
* When the world has more than one rank, :func:`init` installs a ``sys.excepthook``: an
  uncaught exception prints its traceback (each line prefixed ``[rank R]`` unless the
  launcher prefixes lines itself), writes a root-cause record for ``shardflow run`` and
  calls ``MPI_Abort`` so that the other ranks do not wait forever in their next
  collective.
* :func:`world_info` is what lower-level consumers (the DataLoader's automatic sharding)
  ask: rank, world size, whether a world is initialised and whether data parallel wrapped
  a model (:func:`set_data_parallel`).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass

from .. import _config
from ..backend.xp import cuda_is_available
from .base import Communicator
from .local import LocalCommunicator

_world: Communicator | None = None
_data_parallel = False
_prev_excepthook = None


@dataclass(frozen=True)
class WorldInfo:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    initialized: bool
    data_parallel: bool
    launcher: str


def init(backend: str | None = None) -> Communicator:
    """Create (once) and return the world communicator; see the module docstring."""
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

        comm = MPICommunicator()
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
    if comm.size > 1:
        install_excepthook()
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
    uninstall_excepthook()


def set_data_parallel(flag: bool = True) -> None:
    """Data parallel announces itself so that DataLoaders shard their data automatically."""
    global _data_parallel
    _data_parallel = bool(flag)


def world_info() -> WorldInfo:
    """Where this process stands, without initialising anything."""
    info = _config.launch_info()
    if _world is None:
        return WorldInfo(0, 1, 0, 1, False, False, info.launcher)
    return WorldInfo(_world.rank, _world.size, info.local_rank, info.local_world_size, True,
                     _data_parallel, info.launcher)


# -- failure handling ------------------------------------------------------------------
def _rank() -> int:
    return _world.rank if _world is not None else _config.launch_info().rank


def prefixed(text: str, rank: int) -> str:
    """``text`` with every line prefixed ``[rank R]`` (unless the launcher prefixes lines)."""
    if not _config.rank_prefix_enabled():
        return text
    return "".join(f"[rank {rank}] {line}\n" for line in text.rstrip("\n").split("\n"))


def write_failure_record(kind: str, message: str, tb: str, exit_code: int) -> None:
    """Leave a root-cause record for ``shardflow run`` (if it asked for one)."""
    folder = _config.failure_dir()
    if not folder:
        return
    rank = _rank()
    rec = {"rank": rank, "time": time.time(), "kind": kind, "message": message,
           "traceback": tb, "exit_code": exit_code, "pid": os.getpid()}
    try:
        path = os.path.join(folder, f"rank{rank}.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.replace(tmp, path)
    except OSError:
        pass


def abort_job(message: str, kind: str = "error", exit_code: int = 1, tb: str = "") -> None:
    """Print ``message``, record it for the launcher and end every rank (MPI_Abort)."""
    rank = _rank()
    write_failure_record(kind, message, tb, exit_code)
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    sys.stderr.write(prefixed((tb + message) if tb else message, rank))
    sys.stderr.flush()
    world = _world
    if world is not None and world.size > 1 and hasattr(world, "abort"):
        world.abort(exit_code)
    os._exit(exit_code)


def _excepthook(exc_type, exc, tb):
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    rank = _rank()
    msg = (f"shardflow: rank {rank} raised an uncaught {exc_type.__name__}; aborting the whole "
           "job (MPI_Abort) so that no rank waits forever for it.\n")
    abort_job(msg, kind="exception", exit_code=1, tb=text)


def install_excepthook() -> None:
    global _prev_excepthook
    if sys.excepthook is not _excepthook:
        _prev_excepthook = sys.excepthook
        sys.excepthook = _excepthook


def uninstall_excepthook() -> None:
    global _prev_excepthook
    if sys.excepthook is _excepthook:
        sys.excepthook = _prev_excepthook or sys.__excepthook__
    _prev_excepthook = None
