"""Bounding the start of the MPI world by ``SHARDFLOW_COMM_TIMEOUT``, or by
``init_process_group(timeout=...)`` when the program passes one (torch honours it for a
straggler too: its rendezvous fails after ``timeout``; session 37, it was ignored here and
the others waited up to 600 s). With ``timeout=``, when it passes and every rank is known to
have reached ``init_process_group`` (the arrival marks below), the start is MPI's own and is
given up to ``SHARDFLOW_COMM_TIMEOUT`` in all, so a short ``timeout=`` does not fail a start
that the machine's load slows.

``init_process_group`` on MPI initialises MPI (a collective start-up: every rank waits for
the others) and builds the world communicator (``Dup``, the arrival board's window, a
``Barrier``: collectives too). A rank that never gets there (stuck in its own code before
``init_process_group``, or in ``MPI_Init`` itself) used to leave the others waiting for
good; the collective watchdog only starts once the world exists.

:class:`InitWatchdog` bounds that start: a watchdog (a forked child process) that, unless the world is built
within the timeout, prints a report, leaves a root-cause record for ``shardflow run`` and
ends this rank (SIGKILL; ``MPI_Abort`` needs an initialised MPI; the record carries exit
code 124, which ``shardflow run`` reports). mpiexec then ends the job, the rank that never
arrived included. Under ``shardflow run`` each rank marks
its arrival in ``SHARDFLOW_FAILURE_DIR`` before initialising MPI, so the report names the
ranks that never arrived (:func:`init_timeout_report`).
"""

from __future__ import annotations

import os
import select  # here, not in the forked watchdog: an import there can deadlock (below)
import signal
import time

from .. import _config
from . import failure

_ARRIVED = "init-arrived-rank{}"  # not *.json: the launcher reads only those as records


def _mark_arrival(rank: int) -> None:
    folder = _config.failure_dir()
    if not folder:
        return
    try:
        with open(os.path.join(folder, _ARRIVED.format(rank)), "w"):
            pass
    except OSError:  # a remote host has no such folder: the report says less
        pass


def arrived_ranks(world_size: int) -> list[int] | None:
    """The ranks that marked their arrival (None outside ``shardflow run``)."""
    folder = _config.failure_dir()
    if not folder or not os.path.isdir(folder):
        return None
    return [r for r in range(world_size) if os.path.exists(os.path.join(folder, _ARRIVED.format(r)))]


def init_timeout_report(rank: int, world_size: int, limit: float, arrived: list[int] | None,
                        source: str = "SHARDFLOW_COMM_TIMEOUT") -> str:
    """What a rank whose world did not start within ``limit`` seconds (set by ``source``)
    prints."""
    head = (f"shardflow: init_process_group did not complete on rank {rank} within {limit:g} s "
            f"({source}): starting MPI waits for all {world_size} ranks.")
    if arrived is None:
        why = (" Which ranks did not get there is known only under `shardflow run`; look for a "
               "rank still busy (or stuck) before init_process_group.")
    else:
        missing = [r for r in range(world_size) if r not in arrived]
        if missing:
            why = (f" Rank(s) that never reached init_process_group: {missing} (still running "
                   "code before it, or stuck there); fix that rank's code path, or raise "
                   f"{source} if its start legitimately takes longer.")
        else:
            why = (" Every rank reached init_process_group, so MPI's own start-up is stuck: on "
                   "several hosts check that they reach each other (`shardflow doctor --hosts "
                   "...`, OMPI_MCA_btl_tcp_if_include).")
    return head + why + " Ending the job.\n"


class InitWatchdog:
    """Context manager around the start of the world; see the module docstring.

    The watchdog is a forked child process, not a thread: mpi4py holds the GIL inside
    ``MPI_Init``, so a Python thread of this process could not run while it hangs (measured:
    a ticking thread stopped for the 8 s a peer was late). The child is forked before MPI
    is initialised, waits on a pipe for ``limit`` seconds, and exits when this process
    closes the pipe (the world started) or dies; on a timeout it writes the report, the
    record (exit code 124) and kills this process (SIGKILL), whose exit mpiexec turns into
    the end of the job."""

    def __init__(self, limit: float, source: str = "SHARDFLOW_COMM_TIMEOUT",
                 fallback: float | None = None):
        self.limit = limit
        self.source = source  # what set the limit, for the report
        # init_process_group's timeout= bounds the wait for a rank that has not arrived;
        # once every rank is known to be in init_process_group (arrival marks, under
        # `shardflow run`), MPI's own start-up has up to ``fallback`` (SHARDFLOW_COMM_TIMEOUT)
        # in all: a short timeout= (1 s in a test) must not fail a start slowed by the load
        self.fallback = fallback if fallback is not None and fallback > limit else None
        self._pipe = None
        self._child = None

    def __enter__(self) -> InitWatchdog:
        info = _config.launch_info()
        self.rank, self.world_size = info.rank, info.world_size
        _mark_arrival(self.rank)
        if not hasattr(os, "fork"):
            return self
        read_end, write_end = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the watchdog: only os-level work until it exits
            try:
                os.close(write_end)
                self._watch(read_end, parent)
            finally:
                os._exit(0)
        os.close(read_end)
        self._pipe, self._child = write_end, pid
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            failure.say_lifecycle("started")
        if self._pipe is not None:
            os.close(self._pipe)  # the world started (or failed otherwise): the child exits
            self._pipe = None
            _reap(self._child)

    def _watch(self, read_end: int, parent: int) -> None:
        ready, _, _ = select.select([read_end], [], [], self.limit)
        if ready:  # closed: the world started, or the rank is gone
            return
        limit, source, arrived = self.limit, self.source, arrived_ranks(self.world_size)
        if self.fallback is not None and arrived is not None and len(arrived) == self.world_size:
            ready, _, _ = select.select([read_end], [], [], self.fallback - self.limit)
            if ready:
                return
            limit, source, arrived = self.fallback, "SHARDFLOW_COMM_TIMEOUT", arrived_ranks(
                self.world_size)
        msg = init_timeout_report(self.rank, self.world_size, limit, arrived, source)
        failure.write_failure_record("timeout", msg, "", failure.TIMEOUT_EXIT_CODE)
        os.write(2, failure.prefixed(msg, self.rank).encode())
        os.kill(parent, 9)  # SIGKILL: MPI_Init holds the rank; nothing softer would run


def _reap(child: int, grace_s: float = 5.0) -> None:
    """Wait for the watchdog child, which exits once its pipe is closed; never for ever. A
    child forked from a multi-threaded process (a pytest-xdist worker, a program's threads)
    can be stuck on a lock another thread held at the fork (an import, a logging lock): an
    unbounded ``waitpid`` then hung ``init_process_group`` (seen in CI). After ``grace_s``
    the child is killed and reaped."""
    deadline = time.monotonic() + grace_s
    try:
        while time.monotonic() < deadline:
            pid, _ = os.waitpid(child, os.WNOHANG)
            if pid:
                return
            time.sleep(0.005)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
