"""``spawn`` as one MPI job: the children of ``mp.spawn(fn, args, nprocs)`` started by
mpiexec, so that ``init_process_group(rank=i, world_size=nprocs)`` in them forms one group.

Why. PyTorch's DDP tutorial (and most DDP programs written before torchrun) start their
ranks with ``mp.spawn`` and let them meet through ``MASTER_ADDR``/``MASTER_PORT``.
shardflow's process groups are MPI communicators, and Open MPI cannot join independently
started processes into one (``MPI_Comm_connect`` between singletons needs a shared runtime:
it fails with ``MPI_ERR_INTERN``). So ``spawn`` itself becomes the launcher: the same
``mpiexec`` line ``shardflow run`` uses (``comm/launcher.py``), and child ``i`` is MPI rank
``i``. ``MASTER_ADDR``/``MASTER_PORT`` are then not needed (MPI wires the ranks up).

How a child finds ``fn``. As the standard library's spawn start method does: the parent
writes ``multiprocessing.spawn.get_preparation_data()`` (``sys.path``, the working folder,
the main script's path) and the pickled ``(fn, args)`` to a file in a private temporary
folder; each rank (``python -m shardflow.multiprocessing.mpi_child FILE``) runs
``multiprocessing.spawn.prepare()`` on it, which re-imports the main script as
``__mp_main__`` (its ``if __name__ == "__main__":`` block does not run again), then
unpickles ``fn`` and calls ``fn(rank, *args)``.

When. Only where the result is the same as separate ``multiprocessing`` children would give
(:func:`can_launch`): ``join=True``, the ``spawn`` start method, more than one process, not
already inside an MPI job, an mpiexec present, and arguments that are plain data (numbers,
strings, bytes, ``None``, containers of them, ``argparse.Namespace``). Tensors, queues,
pipes and events must stay ``multiprocessing`` objects (shared memory, inherited handles),
so spawn keeps its ``multiprocessing`` children for them.

Failures, as ``spawn``'s: a child that raises writes its traceback to ``ERRDIR/<rank>``
and exits 1, mpiexec then ends the other ranks, and the parent raises
``ProcessRaisedException`` with the first failing child's index and traceback (the
earliest written file), or ``ProcessExitedException`` with mpiexec's exit status. A child
that ends without Python seeing it (``os._exit(3)``) is found by its marks (``mpi_child.py``):
"process 1 terminated with exit code 3", ``error_index`` 1 and its pid, as torch's
(session 35: it was index 0 and no process named).
"""

from __future__ import annotations

import argparse
import multiprocessing.spawn as _mp_spawn
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .. import _config
from ..comm import arrival, board_file, launcher

__all__ = ["can_launch", "launch"]

_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _plain(value, depth: int = 0) -> bool:
    """Whether ``value`` is data that pickling copies without losing anything."""
    if depth > 20:
        return False
    if isinstance(value, _PLAIN):
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    if type(value) is argparse.Namespace:
        return _plain(vars(value), depth + 1)
    return False


def can_launch(args, nprocs: int, join: bool, start_method: str) -> bool:
    """Whether ``spawn`` should start its children as one MPI job (see the module docstring)."""
    if nprocs < 2 or not join or start_method != "spawn" or not _plain(tuple(args)):
        return False
    if _config.launch_info().launcher == "mpiexec":  # already a rank: no nested jobs
        return False
    try:
        launcher.find_mpiexec()
    except FileNotFoundError:
        return False
    return True


def _child_env() -> dict[str, str]:
    """The ranks' environment: ``shardflow run``'s, without a singleton parent's MPI and
    PMIx variables (they would point the children at the parent's runtime)."""
    env = launcher.rank_env()
    for name in list(env):
        if name.startswith(("OMPI_COMM_WORLD", "PMIX_", "PRTE_JOBID")) or name in ("OMPI_UNIVERSE_SIZE",):
            del env[name]
    return env


def launch(fn, args, nprocs: int) -> None:
    """Run ``fn(i, *args)`` on ranks ``0..nprocs-1`` of one mpiexec job; return when all
    finished, raise as ``spawn`` does when one failed."""
    from .spawn import ProcessExitedException, ProcessRaisedException

    workdir = tempfile.mkdtemp(prefix="shardflow-spawn-")  # mode 0700
    try:
        payload = os.path.join(workdir, "payload.pickle")
        errdir = os.path.join(workdir, "errors")
        os.mkdir(errdir)
        with open(payload, "wb") as fh:
            preparation = _mp_spawn.get_preparation_data("shardflow-spawn")
            preparation["authkey"] = bytes(preparation["authkey"])  # an AuthenticationString refuses pickle
            pickle.dump({"preparation": preparation,
                         "target": pickle.dumps((fn, tuple(args))), "errdir": errdir}, fh)
        program = [sys.executable, "-u", "-m", "shardflow.multiprocessing.mpi_child", payload]
        cmd = launcher.build_mpiexec_command(nprocs, program, tag_output=False)
        boards = os.path.join(workdir, "boards")  # each rank's arrival-board mirror
        os.mkdir(boards)
        env = {**_child_env(), "SHARDFLOW_BOARD_DIR": boards}
        code = subprocess.call(cmd, env=env, preexec_fn=launcher.parent_death_signal())
        if code == 0:
            return
        ended_at = time.time()
        entries = sorted(os.listdir(errdir), key=lambda n: os.stat(os.path.join(errdir, n)).st_mtime)
        failed = [n for n in entries if n.isdigit()]
        exited = [n for n in entries if n.endswith(".exit")]
        if failed:
            index = int(failed[0])
            with open(os.path.join(errdir, failed[0]), "rb") as fh:
                trace = pickle.load(fh)
            at = os.stat(os.path.join(errdir, failed[0])).st_mtime
            raise ProcessRaisedException(
                f"\n\n-- Process {index} terminated with the following error:\n{trace}"
                f"{_doing(boards, index, at, raised=True)}", index, _pid(errdir, index))
        if exited:  # a rank called sys.exit(code): the first one
            index = int(exited[0].split(".")[0])
            with open(os.path.join(errdir, exited[0])) as fh:
                rank_code = int(fh.read())
            raise ProcessExitedException(f"process {index} terminated with exit code {rank_code}"
                                         f"{_doing(boards, index, ended_at)}",
                                         index, _pid(errdir, index), rank_code)
        err = _left_early(boards, errdir, entries, code) or _exited_by_itself(errdir, entries, nprocs, code)
        err.msg += _doing(boards, err.error_index, ended_at)
        err.args = (err.msg,)
        raise err
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _left_early(boards: str, errdir: str, entries: list[str], code: int):
    """The ``ProcessExitedException`` for a rank whose function returned (or called
    ``sys.exit(0)``, or was interrupted) while another rank waited for it in a collective or
    send/recv: its exit hook (``comm/mpi_exit.py``) skipped ``MPI_Finalize`` so that mpiexec
    stopped the job, and its board says *exiting*. None when no rank's board says so (before,
    the report said no process raised and named rank 0, the rank that waited)."""
    from .spawn import ProcessExitedException

    ends = board_file.read_boards(boards)
    names = set(entries)
    started = [int(n.split(".")[0]) for n in names if n.endswith(".pid")]
    if any(f"{r}.done" not in names and f"{r}.killed" not in names for r in started):
        return None  # a rank ended by itself (os._exit, a crash): _exited_by_itself names it
    early = sorted(r for r, e in ends.items() if e.state.phase == arrival.PHASE_EXITING and f"{r}.done" in names)
    others = sorted(r for r, e in ends.items() if r not in early and _waits(e.state))
    if not early or not others:
        return None
    index = early[0]
    return ProcessExitedException(
        f"process {index} ended while process(es) {others} still waited for it (its function "
        "returned, called sys.exit() or was interrupted before a collective or send/recv the "
        f"others had started; mpiexec then stopped the job with exit code {code}): every process "
        "must make the same collectives in the same order (the lines below say which)",
        index, _pid(errdir, index), code)


def _waits(state) -> bool:
    """Whether a rank's board says it waits (a collective, a sub-group's, a send/recv)."""
    return state.waiting > 0 or bool(state.elsewhere) or bool(state.p2p[5])


def _exited_by_itself(errdir: str, entries: list[str], nprocs: int, code: int):
    """The ``ProcessExitedException`` for a job no rank of which raised or called
    ``sys.exit``: the rank that started (``<rank>.pid``) but neither returned (``.done``)
    nor was stopped by mpiexec (``.killed``) ended by itself (``os._exit``, a crash), with
    mpiexec's exit status (the first failing process's code; 128 + a signal is reported as
    torch's ``exit_code`` -signal with ``signal_name``)."""
    from .spawn import ProcessExitedException

    names = set(entries)
    started = sorted(int(n.split(".")[0]) for n in names if n.endswith(".pid"))
    alone = [r for r in started if f"{r}.done" not in names and f"{r}.killed" not in names]
    signal_name = None
    if code > 128:
        try:
            signal_name = signal.Signals(code - 128).name
        except ValueError:
            pass
    how = f"signal {signal_name}" if signal_name else f"exit code {code}"
    if signal_name:  # torch's exit_code for a signal: the process's, minus the signal
        code = 128 - code  # (mpiexec's status was 128 + it; session 37: 137 for SIGKILL)
    if len(alone) == 1:
        index = alone[0]
        return ProcessExitedException(
            f"process {index} terminated with {how} (it ended without raising a Python "
            "exception, e.g. os._exit() or a crash; mpiexec's message is above)", index,
            _pid(errdir, index),
            code, signal_name)
    which = (f"one of processes {alone}" if alone else "a process")
    return ProcessExitedException(
        f"spawn: the MPI job of {nprocs} processes ended with {how}: {which} ended without "
        "raising a Python exception (os._exit() or a crash; mpiexec's message is above)",
        alone[0] if alone else 0, -1, code, signal_name)


def _doing(boards: str, failed: int, ended_at: float, raised: bool = False) -> str:
    """What each rank was doing when the job ended, from the ranks' arrival-board mirrors
    (``comm/board_file.py``, the lines ``shardflow run`` prints): the rank(s) left waiting for
    the failed one, and in which call. Empty when no rank had a world of more than one."""
    lines = board_file.job_end_lines(board_file.read_boards(boards), failed, ended_at)
    if raised:  # its board says "exiting": mpi_child caught fn's exception, then it exited
        lines = [line.replace(board_file.EXITING, "exiting after the exception above") for line in lines]
    return "\n" + "\n".join(lines) if lines else ""


def _pid(errdir: str, index: int) -> int:
    """Process ``index``'s pid from its ``<index>.pid`` mark (-1 when it never wrote one)."""
    try:
        with open(os.path.join(errdir, f"{index}.pid")) as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return -1
