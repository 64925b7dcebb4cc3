"""Background MPI progress: one daemon thread per process that polls the pending async
operations while a caller holds it on (DDP's reducer, while its buckets are in flight).

Why: this Open MPI build has no asynchronous progress (``ompi_info``: "OMPI progress: no"),
so a non-blocking collective (``Iallreduce``: several rounds of messages) advances only
inside MPI calls. Polling from the gradient hooks advances it only as often as hooks run,
and the end-of-backward wait naps up to 1 ms between polls (``mpi_work.py``). A thread that
polls every 100 us lets each round start as soon as the peer's data is there, while the main
thread computes (NumPy releases the GIL). ``shardflow bench ddp --variants`` measures it
against those two (docs/DISTRIBUTED.md, "Overlap").

Safety:

* MPI is initialised ``MPI_THREAD_MULTIPLE`` (``mpi_lib``), so two threads may be inside
  MPI at once; the comm layer's own Python state (pending lists, the data-step queue,
  sequence numbers, operation generators) is not thread-safe, so every entry point of
  :class:`~shardflow.comm.mpi.MPICommunicator` and :class:`~shardflow.comm.mpi_work.MPIWork`
  runs under :data:`~shardflow.comm.mpi_work.LOCK` (a re-entrant lock), and so does each
  poll of the thread. The thread only polls (``Test``), never blocks in MPI, and takes the
  lock with a 10 ms timeout, so a main thread blocked in a collective never stalls it and
  it never stalls the main thread for longer than one poll.
* Exit: the thread is a daemon and :func:`stop` (run by ``mpi_exit.finalize_at_exit``
  before ``MPI_Finalize``) ends it within one poll. A dead peer cannot hang it: ``Test``
  returns; the main thread's wait times out and reports, as without the thread.
* An unexpected error in a poll stops the thread; the main thread, polling the same
  operations itself, meets the same error with its traceback.
"""

from __future__ import annotations

import threading
import time

from .mpi_exit import BEFORE_FINALIZE
from .mpi_work import LOCK, progress_all

NAP_S = 1e-4  # between polls: ~1% of a core, each round of an Iallreduce starts within 0.1 ms
_guard = threading.Lock()
_wake = threading.Event()
_holds = 0
_thread: threading.Thread | None = None
_stopping = False


def hold() -> None:
    """Ask for background progress (until the matching :func:`release`); starts the
    thread on first use."""
    global _holds, _thread
    with _guard:
        if _stopping:
            return
        _holds += 1
        if _thread is None:
            BEFORE_FINALIZE.append(stop)
            _thread = threading.Thread(target=_loop, name="shardflow-mpi-progress", daemon=True)
            _thread.start()
        _wake.set()


def release() -> None:
    """Drop one :func:`hold`; the thread sleeps when none is left."""
    global _holds
    with _guard:
        _holds = max(0, _holds - 1)
        if _holds == 0:
            _wake.clear()


def is_running() -> bool:
    """True while the thread exists and someone holds it on (tests)."""
    return _thread is not None and _thread.is_alive() and _holds > 0


def _loop() -> None:
    global _stopping
    while not _stopping:
        if not _wake.wait(0.5):
            continue
        if _stopping:
            break
        if LOCK.acquire(timeout=0.01):
            try:
                progress_all()
            except Exception:  # noqa: BLE001 - the main thread meets it too (docstring)
                _stopping = True
            finally:
                LOCK.release()
        time.sleep(NAP_S)


def stop(timeout: float = 1.0) -> None:
    """End the thread (at exit, before ``MPI_Finalize``); later holds do nothing."""
    global _stopping
    with _guard:
        _stopping = True
        _wake.set()
        thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)
