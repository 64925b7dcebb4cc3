"""``spawn(fn, args, nprocs)``: run ``fn(i, *args)`` in ``nprocs`` new processes (PyTorch's
``torch.multiprocessing.spawn``).

Each child runs ``fn`` inside a wrapper that, if ``fn`` raises, writes the formatted
traceback to a per-child error file and exits with status 1. The parent waits on the
children's sentinels; as soon as one exits with a non-zero status it terminates the others
(SIGTERM, then SIGKILL after the grace period) and raises ``ProcessRaisedException`` with
the child's index and traceback, or ``ProcessExitedException`` with its exit code or signal
when the child died without a Python exception. ``join=False`` returns the
``ProcessContext`` so the caller can ``join(timeout)`` itself.

With ``join=True`` and arguments that are plain data, the children are started as one MPI
job instead (``mpi_spawn.py``), so that ``init_process_group(rank=i, world_size=nprocs)``
in them forms one process group, as PyTorch's DDP tutorial expects; the failure reports
are the same.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time

from . import mpi_spawn

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
           "spawn", "start_processes"]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A child process died from a signal or exited with a non-zero code without raising."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent terminated us
    except Exception:
        import traceback

        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` s for a child to finish. True when all have finished
        cleanly; raises (after stopping the others) when one failed; else False."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        self._raise(error_index)
        return False  # not reached

    def _raise(self, index: int) -> None:
        failed = self.processes[index]
        path = self.error_files[index]
        if not os.access(path, os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index} terminated with signal {name}",
                                             index, failed.pid, code, name)
            raise ProcessExitedException(f"process {index} terminated with exit code {code}",
                                         index, failed.pid, code)
        with open(path, "rb") as fh:
            trace = pickle.load(fh)
        os.unlink(path)
        raise ProcessRaisedException(
            f"\n\n-- Process {index} terminated with the following error:\n{trace}", index, failed.pid
        )


# True while a child of spawn's MPI job re-imports the main script (mpi_child.py): a spawn
# called then comes from a script without the ``if __name__ == "__main__":`` guard
BOOTSTRAPPING = [False]


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes with ``start_method``; see the module docstring."""
    if BOOTSTRAPPING[0]:  # multiprocessing's own words (its children raise them there too)
        raise RuntimeError(
            "An attempt has been made to start a new process before the current process has "
            "finished its bootstrapping phase. This probably means that you are not using fork "
            "to start your child processes and you have forgotten to use the proper idiom in "
            "the main module:\n\n    if __name__ == '__main__':\n        freeze_support()\n"
            "        ...\n\nThe \"freeze_support()\" line can be omitted if the program is not "
            "going to be frozen to produce an executable. (shardflow: each spawned process "
            "imports the main script again; put the mp.spawn(...) call under "
            "`if __name__ == \"__main__\":`.)")
    if mpi_spawn.can_launch(args, nprocs, join, start_method):
        return mpi_spawn.launch(fn, args, nprocs)
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, name = tempfile.mkstemp(prefix="shardflow-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(name)  # the child creates it only when it fails
        p = ctx.Process(target=_wrap, args=(fn, i, args, name), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(name)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new ``spawn``-ed process
    (``fn`` must be importable: defined at the top level of a module)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
