"""Asynchronous operations of the MPI backend: :class:`MPIWork` and the pending set.

An operation is a generator that yields one ``(start_nonblocking, run_blocking)`` pair per
MPI step and returns its result (see ``mpi_collectives.py``). :class:`MPIWork` starts each
step's non-blocking call once the previous one completed, whenever it is polled
(``is_completed``, ``progress``, ``wait``); an error (a mismatch, an MPI error) is kept
and raised by ``wait``.

Every communicator with unfinished operations is in ``BUSY``; every wait polls all of them
(:func:`progress_all`). A recv posts its data receive only once the sender's signature has
arrived, and a large collective its data call only once the signatures matched, so a rank
blocked on one operation must keep the others moving: a peer may be blocked in a send
whose matching data receive is not posted yet.
"""

from __future__ import annotations

import functools
import threading
import time

from . import profiling as _profiling
from .base import CommError, Work
from .mpi_lib import mpi

# Spin on Test() only briefly, then poll with growing naps (10 us .. 1 ms). Measured on 2
# cores with 2 ranks: spinning for up to 1 s while the peer finishes its backward slowed the
# peer's GPT-mini backward by ~80 ms (378 vs 291 ms); napping from the start did not.
SPIN_S = 2e-4
BUSY: set = set()
# Held by every entry point of the MPI communicator and its works, and by each poll of the
# background progress thread (``mpi_progress.py``): the pending lists, the data-step queue
# and the operation generators are shared Python state. Re-entrant: calls nest.
LOCK = threading.RLock()


def locked(method):
    """Run ``method`` under :data:`LOCK` (the communicator's public calls)."""

    @functools.wraps(method)
    def run(*args, **kwargs):
        with LOCK:
            return method(*args, **kwargs)

    return run


def progress_all() -> None:
    """Advance every unfinished async operation of every communicator."""
    for c in list(BUSY):
        c.progress()


class Call:
    """What a rank is doing, for failure reports: op, sequence number, shape, dtype, peer."""

    __slots__ = ("op", "seq", "shape", "dtype", "peer", "tag")

    def __init__(self, op, seq, shape, dtype, peer=None, tag=0):
        self.op, self.seq, self.shape, self.dtype, self.peer, self.tag = op, seq, shape, dtype, peer, tag


class MPIWork(Work):
    """Handle of one non-blocking operation (see the module docstring)."""

    __slots__ = ("comm", "gen", "req", "call", "done", "value", "error")

    def __init__(self, comm, gen, call):
        self.comm = comm
        self.gen = gen
        self.call = call
        self.req = None
        self.done = False
        self.value = None
        self.error = None
        self._step()

    def _step(self) -> None:
        """Run the generator up to its next MPI call (or its end)."""
        try:
            start, _ = self.gen.send(None)
            self.req = start()
        except StopIteration as stop:
            self.done, self.value, self.req = True, stop.value, None
        except CommError as e:
            self.done, self.error, self.req = True, e, None
        except mpi().Exception as e:
            self.done, self.req = True, None
            self.error = self.comm._mpi_failure(e, self.call)

    def _test(self) -> bool:
        try:
            return self.req.Test()
        except CommError as e:
            self.done, self.req, self.error = True, None, e
            return True
        except mpi().Exception as e:
            self.done, self.req = True, None
            self.error = self.comm._mpi_failure(e, self.call)
            return True

    def is_completed(self) -> bool:
        if self.done:
            return True
        with LOCK:
            return self._advance()

    def _advance(self) -> bool:
        while not self.done:
            if not self._test():
                return False
            if not self.done:
                self._step()
        return True

    def result(self):
        return self.value

    def wait(self, timeout: float | None = None):
        rec = _profiling.current
        if rec is not None and not self.done:  # a profile records the time blocked here
            with rec.span(f"wait {self.call.op}", "wait", seq=self.call.seq,
                          group=",".join(map(str, self.comm.world_ranks))):
                return self._wait(timeout)
        return self._wait(timeout)

    def _wait(self, timeout: float | None):
        if not self.is_completed():
            comm = self.comm
            board = comm.board
            p2p = self.call.peer is not None
            if p2p:
                board.p2p_waiting(True)
            else:
                comm.mark_waiting(self.call.seq)
            limit = comm._timeout if timeout is None else float(timeout)
            start = time.monotonic()
            spin_until = start + SPIN_S
            deadline = start + limit
            nap = 1e-5
            while True:
                with LOCK:  # released while napping: the progress thread may poll then
                    if self._advance():
                        break
                    if BUSY:
                        progress_all()
                now = time.monotonic()
                if now > spin_until:
                    if now > deadline:
                        comm._on_timeout(self.call, now - start, limit,
                                         own_limit=timeout is not None)
                    time.sleep(nap)
                    nap = min(nap * 2, 1e-3)
            if p2p:
                board.p2p_waiting(False)
            else:
                comm.mark_waiting(-1)
        if self.error is not None:
            raise self.error
        return self.value
