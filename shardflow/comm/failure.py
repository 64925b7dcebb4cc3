"""The job's failure policy (layer L2): how a rank that must stop ends the whole job.

* :func:`abort_job` prints a message (every line prefixed ``[rank R]`` unless the launcher
  prefixes lines itself, :func:`prefixed`), leaves a root-cause record for ``shardflow run``
  (:func:`write_failure_record`) and ends every rank: ``MPI_Abort`` through the world
  communicator when the world has more than one rank and can abort, then ``os._exit``.
  The backends call it when a collective outlives ``SHARDFLOW_COMM_TIMEOUT``
  (:data:`TIMEOUT_EXIT_CODE`); ``mpi_exit`` prints through :func:`print_failure`.
* The excepthook: with more than one rank, an uncaught exception prints its traceback,
  writes the record and aborts the job, so that no rank waits forever for the one that
  raised.

The world communicator whose rank the reports name and which ``abort_job`` aborts is given
by ``world.init`` (:func:`install`) and taken back by ``world.destroy`` (:func:`uninstall`).
This module imports no backend and no backend imports ``world``: the factory (``world``)
depends on the policy, never the other way round.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from .. import _config

TIMEOUT_EXIT_CODE = 124  # a collective outlived SHARDFLOW_COMM_TIMEOUT (as coreutils' timeout)
# the kind of record a rank leaves when a stop signal reached it and the job stopped
# gracefully (not a failure): ``shardflow run`` names that rank instead of the first to exit
STOP_SIGNAL_RECORD = "stop-signal"
# the lines a rank of `shardflow run` prints (stdout) when its MPI world has started and
# when its program has ended normally; the launcher swallows them and checks that every
# rank that started also ended, even when mpiexec exits 0 (it did after losing a host)
LIFECYCLE_LINES = {"started": "[shardflow-lifecycle] started", "ended": "[shardflow-lifecycle] ended"}


def say_lifecycle(event: str) -> None:
    """Print this rank's lifecycle line for ``shardflow run`` (only under it)."""
    if _config.failure_dir():
        try:
            sys.stdout.flush()
            os.write(1, (LIFECYCLE_LINES[event] + "\n").encode())
        except OSError:
            pass

_world = None  # the world communicator given by world.init (None: no world yet)
_prev_excepthook = None


def install(world) -> None:
    """Report and abort through ``world``; with more than one rank, install the excepthook."""
    global _world
    _world = world
    if world.size > 1:
        _install_excepthook()


def uninstall() -> None:
    """Forget the world communicator and restore the previous excepthook."""
    global _world
    _world = None
    _uninstall_excepthook()


def _rank() -> int:
    return _world.rank if _world is not None else _config.launch_info().rank


def prefixed(text: str, rank: int) -> str:
    """``text`` with every line prefixed ``[rank R]`` (unless the launcher prefixes lines)."""
    if not _config.rank_prefix_enabled():
        return text
    return "".join(f"[rank {rank}] {line}\n" for line in text.rstrip("\n").split("\n"))


def print_failure(text: str, rank: int) -> None:
    """Write ``text`` to stderr, rank-prefixed, after whatever the script printed to stdout."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    sys.stderr.write(prefixed(text, rank))
    sys.stderr.flush()


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


_ABORT_OUTPUT_GRACE_S = 0.25


def abort_job(message: str, kind: str = "error", exit_code: int = 1, tb: str = "") -> None:
    """Print ``message``, record it for the launcher and end every rank (MPI_Abort)."""
    rank = _rank()
    write_failure_record(kind, message, tb, exit_code)
    print_failure((tb + message) if tb else message, rank)
    world = _world
    if world is not None and world.size > 1 and hasattr(world, "abort"):
        # MPI_Abort has mpiexec kill every rank at once, and output still in flight from this
        # rank to mpiexec can be lost or overtaken by the abort banner: give it a moment.
        time.sleep(_ABORT_OUTPUT_GRACE_S)
        world.abort(exit_code)
    os._exit(exit_code)


def _excepthook(exc_type, exc, tb):
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    rank = _rank()
    msg = (f"shardflow: rank {rank} raised an uncaught {exc_type.__name__}; aborting the whole "
           "job (MPI_Abort) so that no rank waits forever for it.\n")
    abort_job(msg, kind="exception", exit_code=1, tb=text)


def _install_excepthook() -> None:
    global _prev_excepthook
    if sys.excepthook is not _excepthook:
        _prev_excepthook = sys.excepthook
        sys.excepthook = _excepthook


def _uninstall_excepthook() -> None:
    global _prev_excepthook
    if sys.excepthook is _excepthook:
        sys.excepthook = _prev_excepthook or sys.__excepthook__
    _prev_excepthook = None
