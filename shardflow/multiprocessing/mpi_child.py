"""One rank of an MPI-launched ``spawn`` (``mpi_spawn.py``):
``python -m shardflow.multiprocessing.mpi_child PAYLOAD``.

Prepares the process as the standard library's spawn start method does (``sys.path``, the
working folder, the main script re-imported as ``__mp_main__``), then runs
``fn(rank, *args)``; a raised exception's traceback goes to ``ERRDIR/<rank>`` and the rank
exits 1 (the parent turns it into ``ProcessRaisedException``); a ``sys.exit(code)`` with a
non-zero code is recorded in ``ERRDIR/<rank>.exit`` (the parent's ``ProcessExitedException``
names the rank and the code, as torch's).

A rank that ends without Python seeing it (``os._exit(3)``, a crash) leaves no record, so
each rank also writes ``ERRDIR/<rank>.pid`` when it starts, ``<rank>.done`` when ``fn``
returns or raises, and ``<rank>.killed`` when mpiexec's SIGTERM stops it because another
rank failed: the one rank with a pid file and neither of the others is the one that exited
by itself, and the parent names it (``ProcessExitedException.error_index``, ``error_pid``).
"""

from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pickle
import signal
import sys
import traceback


def main(argv: list[str]) -> int:
    from .. import _config

    with open(argv[0], "rb") as fh:
        payload = pickle.load(fh)  # written by our parent into its private (0700) folder
    rank = _config.launch_info().rank
    errdir = payload["errdir"]
    _mark(f"{errdir}/{rank}.pid", str(os.getpid()))
    signal.signal(signal.SIGTERM, lambda *_: _killed(f"{errdir}/{rank}.killed"))
    try:
        return _run(lambda: _target(payload, rank), rank, errdir)
    finally:
        _mark(f"{errdir}/{rank}.done", "")


def _target(payload, rank: int):
    """Re-import the main script as the standard library's spawn does, then ``fn(rank,
    *args)``. An error while importing (a spawn call in a script without the ``__main__``
    guard, a module-level exception, ``fn`` not found) is reported as ``fn``'s would be:
    the parent's ``ProcessRaisedException`` carries its traceback (it said "a process ended
    without raising a Python exception")."""
    from .spawn import BOOTSTRAPPING

    BOOTSTRAPPING[0] = True
    try:
        _mp_spawn.prepare(payload["preparation"])
    finally:
        BOOTSTRAPPING[0] = False
    fn, args = pickle.loads(payload["target"])
    fn(rank, *args)


def _mark(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _killed(path: str) -> None:
    """mpiexec's SIGTERM (another rank failed): leave the mark, then die of the signal."""
    _mark(path, "")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _run(call, rank: int, errdir: str) -> int:
    from ..comm.mpi_exit import EXIT_CAUSE  # the words of this rank's exit report

    try:
        call()
    except KeyboardInterrupt:
        EXIT_CAUSE[0] = "its mp.spawn function was interrupted (KeyboardInterrupt)"
        return 1
    except SystemExit as stop:  # sys.exit(code) in fn: the parent names this rank and code
        code = stop.code if isinstance(stop.code, int) or stop.code is None else 1
        EXIT_CAUSE[0] = f"its mp.spawn function called sys.exit({code if code is not None else ''})"
        if code:
            path = f"{errdir}/{rank}.exit"
            with open(path + ".tmp", "w") as fh:
                fh.write(str(code))
            os.replace(path + ".tmp", path)
        raise
    except Exception as e:
        EXIT_CAUSE[0] = f"its mp.spawn function raised {type(e).__name__}"
        path = f"{errdir}/{rank}"
        with open(path + ".tmp", "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        os.replace(path + ".tmp", path)
        return 1
    EXIT_CAUSE[0] = "its mp.spawn function returned"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
