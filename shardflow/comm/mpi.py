"""MPI backend (layer L2): :class:`MPICommunicator`, over mpi4py (imported by ``mpi_lib``).

Algorithm and communication plan
--------------------------------
* **Every collective carries its call signature.** Each rank's call is summarised in 96
  bytes (``callsig.py``: op, sequence number, reduce op, dtype, element count, root,
  shape). The first MPI call of every collective is one ``Allgather`` on a duplicate of
  the communicator (the *side* communicator) whose per-rank block starts with that
  signature, so every rank sees every
  rank's call before any array is written, and a mismatch (another collective, another
  dtype or element count, another root or reduce op, a drifted sequence) raises
  :class:`CommError` naming each rank's call, on every rank, with the arrays unchanged.
  Mismatched calls always meet in that same ``Allgather``, whose blocks have the same size
  for every call on a world (``mpi_plans.block_bytes``), so no block is ever truncated:
  every rank completes the exchange and raises the same report from the real signatures.

  - **Small messages** (world x (96 + payload) <= ``EAGER_SAFE_BYTES`` = 3 KB: 1.4 KB of
    data on 2 ranks; ``mpi_plans.py``) ride in that ``Allgather``: ``[signature | data]``.
    all_reduce and reduce_scatter then reduce the gathered rows locally with NumPy (in
    rank order, so every rank gets bit-identical results), broadcast / all_gather /
    all_to_all copy rows out. One MPI call per collective, as before. The bound keeps every message of the
    exchange under Open MPI's shared-memory eager limit: a size mismatch can then only
    truncate an eager message, which MPI reports cleanly, whereas truncating a larger
    message corrupts the receiver's memory (measured, see ``EAGER_SAFE_BYTES``).
  - **Larger messages**: the ``Allgather`` holds the signatures only; then the data goes
    through MPI's own collective (``Allreduce(IN_PLACE)``, ``Bcast``, ``Allgather``,
    ``Alltoall``) on the communicator, on the user's buffer, zero-copy; reduce_scatter
    is a pairwise exchange (``world - 1`` ``Sendrecv`` ring shifts on the ``_pairwise``
    communicator, one block of scratch: Open MPI's ``Reduce_scatter_block`` took twice the
    whole input). MPI matches collectives by issue order: the signature exchanges are issued
    when called, the data steps strictly in call order (``_data_turn``), on every rank. The extra
    small collective costs a few microseconds (``shardflow bench comm``: see
    docs/DISTRIBUTED.md for the table).
  - ``SHARDFLOW_DEBUG=collectives`` compares the shapes as well (by default only what
    decides MPI's result is compared: ranks may hold the same elements in other shapes).
  - **Point-to-point**: ``send`` posts the signature on the side communicator and the data
    on the communicator (same tag); ``recv`` receives the signature first and posts the
    data receive only if dtype and element count match (else it consumes the message into
    a scratch buffer and raises a :class:`CommError` with both shapes; the receive buffer
    is untouched). Data receives are posted in call order per (source, tag), as MPI
    matches them.
* **Buffers.** Arrays go to MPI as ``[buffer, MPI datatype]``; nothing is pickled.
  Non-contiguous arrays are packed and unpacked; float16/bfloat16 are reduced in float32
  (MPI has no reduction for them). ``AVG`` is ``SUM`` followed by ``/= world``.
* **Blocking and non-blocking.** The signature exchange is always the non-blocking
  ``Iallgather``, polled (MPI never matches a blocking collective with a non-blocking one,
  so the variant must not depend on local state; polling also advances pending async
  work, see ``mpi_work.py``). A blocking call then runs the data step's blocking MPI call.
  A watchdog thread bounds both: the call records ``(op, sequence, shape, start time)``;
  the watchdog wakes every ``min(1 s, timeout/10)`` and ends the job if the call has
  outlived ``SHARDFLOW_COMM_TIMEOUT`` (default 600 s). ``async_op=True`` uses the non-blocking MPI
  calls; a large collective's data call is issued once the signature exchange completed
  and matched (by :meth:`MPICommunicator.progress`, which data parallel calls from its
  gradient hooks, or by ``wait``). ``wait`` polls ``Test()`` (spinning 200 us, then short
  naps) against the same timeout. Timeout and debug settings are read once, when the
  communicator is created.
* **Arrival board** (``arrival.py``): a one-sided window with one slot per rank holding the
  signature of its last collective, what it waits on and its last point-to-point call.
  On a timeout the rank reads the others' slots and reports who did not arrive, who called
  something else, and for a send/recv what the peer is doing; then it writes the
  root-cause record and calls ``MPI_Abort``. Under ``shardflow run`` the world's slot is
  also mirrored into a file (``board_file.py``), so that when ranks are killed (a rank
  died of a signal, another aborted, ``--timeout``) the launcher still says what each was
  waiting in.
* **Files.** ``mpi_lib`` (the mpi4py adapter), ``mpi_buffers`` (arrays as MPI buffers:
  datatypes, half types, packing), ``mpi_plans`` (cached signatures and buffers per call
  shape), ``mpi_collectives`` / ``mpi_p2p`` (the operations, as generators of MPI steps),
  ``mpi_work`` (async handles, the pending set), ``arrival`` (the board), ``mpi_exit``
  (finalising), ``failure`` (ending the job), this module (the communicator: running
  steps, watchdog, reports).
* **Exit** (``mpi_exit.py``): MPI is finalised by ``mpi_exit`` at interpreter exit, after
  checking that no rank waits for this one; a rank that leaves early (``sys.exit(1)``,
  uneven control flow) skips ``MPI_Finalize`` instead of blocking in it, so mpiexec
  reports its rank and exit code and ends the job.
* **Start** (``mpi_init.py``): building the world (MPI's initialisation, ``Dup``, the
  board, a ``Barrier``) is bounded by the same timeout; a rank that never arrives ends the
  job with a report naming it.
* Groups: ``new_group(ranks)`` is ``Comm.Split`` (collective over the parent, as in
  torch.distributed); members get a new communicator with its own board and sequence. A
  sub-group's waits are also noted on the world's board, so a world timeout names the
  sub-group call a missing rank waits in.
* **Free** (``destroy_process_group``): after ``check_before_free``, the group's async calls
  are completed (a ``Work`` waited afterwards returns at once), the board's slot moves to
  process memory, and ``destroyed`` is set: any later call raises a ``CommError`` naming the
  destroyed group (session 36; such calls wrote to the freed window: segmentation faults).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import zlib

import numpy as np

from .. import _config
from . import callsig, mpi_progress
from . import profiling as _profiling
from .arrival import (
    CALL_LIMIT,
    GROUP_LIMIT,
    ArrivalBoard,
    collective_timeout_report,
    p2p_timeout_report,
)
from .base import CommError, Communicator, CompletedWork
from .board_file import BoardFile
from .callsite import user_call_site
from .failure import TIMEOUT_EXIT_CODE, abort_job
from .mpi_collectives import CollectivesMixin
from .mpi_exit import DATA_PARALLEL, LIVE, check_before_free, uneven_hint
from .mpi_init import InitWatchdog
from .mpi_lib import mpi
from .mpi_p2p import PointToPointMixin
from .mpi_plans import EAGER_SAFE_BYTES, MAX_PLANS, Plan
from .mpi_work import BUSY, SPIN_S, Call, MPIWork, locked, progress_all
from .ranked import RankedMixin

__all__ = ["EAGER_SAFE_BYTES", "MPICommunicator", "MPIWork", "TIMEOUT_EXIT_CODE", "mpi"]


_WORLD_BOARD: list = [None]  # the world communicator's arrival board, once it exists


def _gradient_hint(sigs) -> str:
    """Under DistributedDataParallel, an all_reduce with op=avg is its gradient reduction: a
    rank there meeting another call (session 36: the report named only the calls) is
    usually a rank that ran out of batches and went on to the code after its loop."""
    if not DATA_PARALLEL[0] or any(s is None for s in sigs):
        return ""
    avg = callsig.REDUCE_CODES["avg"]
    if not any(s.op_name == "all_reduce" and s.reduce == avg for s in sigs):
        return ""
    return (" An all_reduce with op=avg is DistributedDataParallel's gradient reduction (in "
            "backward): the rank(s) making it are in a backward the others did not run."
            + uneven_hint())


FORKED = "forked"  # ``destroyed`` of the communicators copied into a forked child
_FORK_HOOK = [False]


def _after_fork_in_child() -> None:
    """A process forked from a rank (a DataLoader worker, a ``multiprocessing`` fork child)
    holds copies of the rank's communicators but is no MPI process: a collective or
    send/recv there was never matched, and with no watchdog thread (threads do not survive
    a fork) the worker, and the rank waiting for its batch, hung for ever (torch's gloo
    hangs too). Every call there now raises (:meth:`MPICommunicator.destroyed_error`)."""
    for c in list(LIVE):
        if c.size > 1:  # a world of one has nobody to wait for: its calls stay no-ops
            c.destroyed = FORKED


class MPICommunicator(CollectivesMixin, PointToPointMixin, RankedMixin, Communicator):
    """A communicator over an ``mpi4py`` ``Comm`` (see the module docstring)."""

    backend = "mpi"
    # mpi_exit polls with it (it may not import mpi_work: mpi_work -> mpi_lib -> mpi_exit)
    progress_pending = staticmethod(progress_all)

    def __init__(self, comm=None, world_ranks=None, init_timeout=None):
        self._timeout = _config.comm_timeout_s()  # read once, when the group is made
        self._progress_thread = _config.progress_thread()
        if comm is None:  # the world: its start is bounded too (mpi_init.py)
            limit = self._timeout if init_timeout is None else init_timeout
            with InitWatchdog(limit, "SHARDFLOW_COMM_TIMEOUT" if init_timeout is None
                              else "init_process_group's timeout=", fallback=self._timeout):
                self._setup(mpi().COMM_WORLD, world_ranks)
        else:
            self._setup(comm, world_ranks)

    def _setup(self, comm, world_ranks) -> None:
        """Everything a communicator holds; collective over ``comm`` (Dup, the board's
        window, a Barrier)."""
        MPI = mpi()
        self._comm = comm
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self._side = self._comm.Dup()
        self._pairwise = self._comm.Dup()  # the messages of large reduce-scatters
        self.world_ranks = list(range(self._size)) if world_ranks is None else list(world_ranks)
        self.seq = 0
        self.p2p_seq = 0
        self._pending: list[MPIWork] = []
        self._recv_fifo: dict = {}  # (source, tag) -> recvs not yet past their signature
        self._any_recvs: list = []  # any-source recvs whose signature has not arrived
        self._data_queue: list = []  # async collectives whose data step is not issued yet
        self._plans: dict = {}
        self._ops = {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
                     "prod": MPI.PROD, "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}
        self._debug = _config.debug_collectives()
        self._cmp = callsig.NBYTES if self._debug else callsig.CHECKED_BYTES
        self._active = None
        self._prof_call = None  # (recorder, frame, op, args) of a profiled blocking call
        self._interrupted = False  # a blocking call's wait ended by KeyboardInterrupt / SystemExit
        self._watchdog = None
        # the world's slot is also mirrored into a file for the launcher (board_file.py)
        self._board = ArrivalBoard(MPI, self._side, mirror=BoardFile.for_rank
                                   if comm is MPI.COMM_WORLD else None)
        # a sub-group's waits are also noted on the world's board (arrival.py, fields 24-41)
        if comm is MPI.COMM_WORLD:
            _WORLD_BOARD[0], self._world_board = self._board, None
        else:
            self._world_board = _WORLD_BOARD[0]
        self._side.Barrier()
        LIVE.add(self)
        if not _FORK_HOOK[0]:  # once, when the first group is made (not at import)
            _FORK_HOOK[0] = True
            os.register_at_fork(after_in_child=_after_fork_in_child)

    # -- basic properties ----------------------------------------------------------------
    @property
    def mpi_comm(self):
        return self._comm

    @property
    def board(self) -> ArrivalBoard:
        return self._board

    # -- running an operation ------------------------------------------------------------
    def _begin(self, op: str, array, reduce=None, root: int = -1, shape=()):
        """Number the collective, write its signature on the board; return (seq, plan)."""
        if self.destroyed:
            raise self.destroyed_error(op)
        self.seq += 1
        seq = self.seq
        if array is not None:
            key = (op, reduce, array.dtype, array.shape, root)
            plan = self._plans.get(key)
            if plan is None:
                if len(self._plans) >= MAX_PLANS:
                    self._plans.clear()
                plan = self._plans[key] = Plan(
                    callsig.fields(op, 0, reduce, array.dtype, array.size, root, array.shape),
                    self._size, array.nbytes, array.dtype, array.shape)
        else:  # barrier and objects: a signature, no data
            plan = Plan(callsig.fields(op, 0, None, np.uint8 if shape else None, 0, root,
                                       shape), self._size, 0, None, shape, small_ok=False)
        self._board.started(seq, plan.sig)
        return seq, plan

    def _run(self, gen, async_op: bool, op: str, seq: int, shape, dtype, me=None,
             data_step: bool = False):
        rec = _profiling.current  # a profile records the issue of an async call (blocking
        if rec is None or not async_op:  # ones: _enter_blocking to _leave_blocking)
            return self._run_steps(gen, async_op, op, seq, shape, dtype, me, data_step)
        with rec.span(op, "comm", **self._prof_args(seq, shape, dtype), async_op=True):
            return self._run_steps(gen, async_op, op, seq, shape, dtype, me, data_step)

    def _prof_args(self, seq, shape, dtype) -> dict:
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize if dtype is not None else 0
        return {"bytes": nbytes, "seq": seq, "group": ",".join(map(str, self.world_ranks))}

    def _run_steps(self, gen, async_op: bool, op: str, seq: int, shape, dtype, me=None,
                   data_step: bool = False):
        """Drive an operation generator: as a Work (async) or with blocking MPI calls.

        A step whose blocking variant is None (the signature exchange) is polled, also in a
        blocking call: MPI does not match a blocking collective with a non-blocking one, so
        the variant must not depend on local state; polling advances pending async work.
        An async operation with a ``data_step`` joins the queue of data steps to issue in
        call order (``_data_turn``); ``me`` receives its handle.
        """
        if async_op:
            work = MPIWork(self, gen, Call(op, seq, shape, dtype))
            if me is not None:
                me.append(work)
            if not work.done:
                if data_step:
                    self._data_queue.append(work)
                self._pending.append(work)
                BUSY.add(self)
            return work
        self._enter_blocking(op, seq, shape, dtype)
        try:
            step = next(gen)
            while True:
                start, blocking = step
                if blocking is None:
                    self._poll(start())
                else:
                    blocking()
                step = gen.send(None)
        except StopIteration as stop:
            return stop.value
        except mpi().Exception as e:
            raise self._mpi_failure(e, Call(op, seq, shape, dtype)) from None
        except (KeyboardInterrupt, SystemExit):
            self._interrupted = True  # _leave_blocking keeps the wait on the board
            raise
        finally:
            self._leave_blocking()

    def _data_turn(self, work) -> None:
        """Wait until the async operations called before ``work`` (None: before now) have
        issued their data step on the communicator.

        MPI matches collectives on a communicator by issue order, and an async data step
        is issued when its operation notices, while being polled, that the signatures
        matched; polling the earlier ones here keeps the issue order the call order on
        every rank. Bounded by the collective timeout.
        """
        q = self._data_queue
        if not q or q[0] is work:
            return
        start = time.monotonic()
        spin_until = start + SPIN_S
        nap = 1e-5
        while q and q[0] is not work:
            head = q[0]
            if head.done:  # finished or failed before issuing: no data step will come
                q.pop(0)
                continue
            head.is_completed()  # issues its data step once its signatures are in
            if q and q[0] is head:
                now = time.monotonic()
                if now - start > self._timeout:
                    self._on_timeout(head.call, now - start, self._timeout)
                if now > spin_until:
                    time.sleep(nap)
                    nap = min(nap * 2, 1e-3)

    def mark_waiting(self, seq: int) -> None:
        """The board says which collective this rank waits on (-1: none); a sub-group's wait
        is noted on the world's board too, for the world's timeout reports."""
        self._board.waiting(seq)
        wb = self._world_board
        if wb is not None:
            q = self._board.q
            known = seq > 0 and q[0] == seq and q[13] == seq  # the last started is this one
            wb.waiting_elsewhere(seq, self._size, self.world_ranks, q[1:13] if known else None)

    def _enter_blocking(self, op, seq, shape, dtype) -> None:
        """A blocking call starts: the board says what we wait on, the watchdog times it."""
        self.mark_waiting(seq)
        self._active = (op, seq, shape, dtype, time.monotonic())
        self._blocked_thread = threading.get_ident()  # the watchdog's report reads its stack
        rec = _profiling.current
        if rec is not None:  # a profile records the blocking call, with its bytes
            self._prof_call = (rec, rec.begin(), op, self._prof_args(seq, shape, dtype))
        if self._watchdog is None:
            self._start_watchdog()

    def _leave_blocking(self) -> None:
        self._active = None
        if self._prof_call is not None:
            rec, frame, op, args = self._prof_call
            self._prof_call = None
            rec.end(frame, op, "comm", args)
        if self._interrupted:
            # Ctrl-C (or a signal handler's SystemExit) inside the wait: the board keeps it,
            # so the report of the job's end says "rank 0 (the failing rank): waiting for 2.0 s
            # in all_reduce(...)" and which ranks never started it, not "in its own code"
            self._interrupted = False
        else:
            self.mark_waiting(-1)

    @staticmethod
    def _poll(req) -> None:
        """Complete ``req`` by polling, advancing every pending async operation meanwhile.

        A peer blocked in a send whose matching recv on this rank is still pending cannot
        have reached this collective; polling lets that recv post its data receive, so the
        peer is released and arrives. Once the signatures are exchanged every rank is inside
        the collective, and the data step may block. The watchdog bounds the wait.
        """
        # Spins, as the blocking MPI call it stands for does: a nap here delays this rank's
        # data step by up to the nap (measured: 1-4 MB all_reduce 10-20 % slower with the
        # 10 us .. 1 ms naps async waits use, when the peer was still in the previous call).
        test = req.Test
        while not test():
            if BUSY:
                progress_all()

    def _start_watchdog(self) -> None:
        """A daemon thread that ends the job when a blocking collective outlives the timeout.

        The main thread sits inside the blocking MPI call (mpi4py releases the GIL there);
        the watchdog wakes every ``min(1 s, timeout / 10)``, and if the collective in progress
        started more than ``timeout`` ago it runs the same report-and-abort as a timed-out
        ``wait`` (MPI is initialised with MPI_THREAD_MULTIPLE, so it may call MPI).
        """
        interval = max(0.02, min(1.0, self._timeout / 10))

        def loop():
            while self._watchdog is not None:
                time.sleep(interval)
                act = self._active
                if act is not None:
                    waited = time.monotonic() - act[4]
                    if waited > self._timeout and self._active is act:
                        self._on_timeout(Call(*act[:4]), waited, self._timeout)

        self._watchdog = threading.Thread(target=loop, name="shardflow-comm-watchdog",
                                          daemon=True)
        self._watchdog.start()

    @staticmethod
    def _done(value, async_op):
        return CompletedWork(value) if async_op else value

    @locked
    def progress(self) -> None:
        if self._pending:
            self._pending = [w for w in self._pending if not w.is_completed()]
            if not self._pending:
                BUSY.discard(self)

    def background_progress(self, on: bool, force: bool = False) -> bool:
        """Hold (``True``) or release (``False``) the background progress thread
        (``mpi_progress.py``): DDP's reducer holds it while its buckets are in flight. A hold
        takes effect when ``SHARDFLOW_PROGRESS_THREAD`` asks for the thread (read when the
        communicator is made; ``_config.progress_thread``) or ``force``; returns whether it
        did, and only a hold that did is released."""
        if self._size == 1:
            return False
        if not on:
            mpi_progress.release()
            return False
        if not (force or self._progress_thread):
            return False
        mpi_progress.hold()
        return True

    # -- checking signatures ---------------------------------------------------------------
    def _check(self, send, recv) -> None:
        """Raise CommError (every rank sees the same table) unless all signatures agree."""
        nb = self._cmp
        mine = send[:nb].tobytes()
        if recv[:, :nb].tobytes() == mine * self._size:
            return
        sigs = [callsig.CallSig.unpack(recv[r]) for r in range(self._size)]
        self._raise_mismatch(sigs, callsig.CallSig.unpack(send))

    def _raise_mismatch(self, sigs, mine) -> None:
        lines = callsig.mismatch_lines(sigs, self.world_ranks, self._cmp)
        compared = ("op, dtype, shape, reduce op and root" if self._debug else
                    "op, dtype, number of elements, reduce op and root; "
                    "SHARDFLOW_DEBUG=collectives also compares shapes")
        raise CommError(
            f"collective mismatch at collective #{mine.seq} on a group of {self._size} "
            f"(this is rank {self.world_rank()}): the ranks did not all make the same call "
            f"(compared: {compared}):\n  " + "\n  ".join(lines) + "\n"
            "Every rank must call the same collectives in the same order with the same dtype, "
            "number of elements, reduce op and root; fix the rank(s) whose line differs. "
            "No array was changed by this call." + (
                " new_group is a collective of the whole group it splits (torch's rule): every "
                "rank calls it, in the same order among its collectives and with the same "
                "ranks, also the ranks it leaves out."
                if any(s.op_name == "new_group" for s in sigs) else "") + callsig.root_hint(sigs)
            + _gradient_hint(sigs)
        )

    def _mpi_failure(self, exc, call: Call) -> CommError:
        """An MPI error (``MPI_ERR_TRUNCATE``: a peer sent more than this rank's call holds)
        turned into a report with every rank's call, read from the arrival board."""
        MPI = mpi()
        try:
            cls = exc.Get_error_class()
        except Exception:  # noqa: BLE001
            cls = None
        states = self._board.peek()
        lines = []
        sigs = [st.sig if st is not None and st.seq == call.seq else None for st in states]
        if call.peer is None and all(s is not None for s in sigs):
            lines = callsig.mismatch_lines(sigs, self.world_ranks, callsig.NBYTES)
            states = []
        for r, st in enumerate(states):
            wr = self.world_ranks[r]
            if st is None:
                lines.append(f"rank {wr}: unknown")
            elif call.peer is None and st.seq == call.seq and st.sig is not None:
                lines.append(f"rank {wr}: {st.sig.describe()} as collective #{st.seq}")
            elif call.peer is None:
                lines.append(f"rank {wr}: {st.collective_text()}")
            elif r == self._rank or wr == call.peer:
                lines.append(f"rank {wr}: {st.p2p_text()}")
        what = (f"{call.op} (collective #{call.seq})" if call.peer is None else
                f"{call.op} {'from' if call.op == 'recv' else 'to'} rank {call.peer} "
                f"(tag {call.tag})")
        head = (f"{what} on rank {self.world_rank()}, shape {tuple(call.shape)}, dtype "
                f"{call.dtype}: ")
        if cls == MPI.ERR_TRUNCATE:
            head += ("MPI_ERR_TRUNCATE: a peer sent more data than this rank's call holds "
                     "(the ranks called with different shapes or dtypes).")
        else:
            head += f"MPI error: {exc}."
        return CommError(head + "\n  " + "\n  ".join(lines) + "\nEvery rank must make the same "
                         "call with the same dtype and number of elements; fix the rank whose "
                         "line differs.")

    # -- failure handling ----------------------------------------------------------------
    def peek_states(self, timeout: float | None = None):
        """Every rank's arrival-board slot (``arrival.RankState``; None = unknown)."""
        return self._board.peek() if timeout is None else self._board.peek(timeout)

    def _on_timeout(self, call: Call, waited: float, limit: float, own_limit: bool = False):
        """Report and end the job; ``own_limit``: the limit was the call's own ``timeout=``
        (``work.wait(timeout=)``, ``barrier(timeout=)``), not the group's."""
        source = CALL_LIMIT if own_limit else GROUP_LIMIT
        states = self._board.peek()
        if call.peer is not None:
            peer = self.world_ranks.index(call.peer) if call.peer in self.world_ranks else None
            msg = p2p_timeout_report(
                rank=self.world_rank(), op=call.op, peer_world=call.peer, tag=call.tag,
                shape=call.shape, dtype=call.dtype, waited=waited, limit=limit,
                peer_state=None if peer is None else states[peer],
                others=[(self.world_ranks[r], st) for r, st in enumerate(states)
                        if r != self._rank], limit_source=source)
        else:
            msg = collective_timeout_report(
                rank=self.world_rank(), op=call.op, seq=call.seq, size=self._size,
                shape=call.shape, dtype=call.dtype, waited=waited, limit=limit,
                states=states, world_ranks=self.world_ranks, limit_source=source)
        waiter = getattr(self, "_blocked_thread", None)
        if threading.current_thread().name == "shardflow-comm-watchdog" and waiter is not None:
            site = user_call_site(sys._current_frames().get(waiter))  # the blocked thread's
        else:
            site = user_call_site()
        if site is not None:  # the program's own call, e.g. d.full_tensor(): what to fix
            msg += f"  rank {self.world_rank()} waits in: {site}\n"
        abort_job(msg, kind="timeout", exit_code=TIMEOUT_EXIT_CODE)

    # -- groups --------------------------------------------------------------------------
    @locked
    def new_group(self, ranks):
        if self.destroyed:
            raise self.destroyed_error("new_group")
        MPI = mpi()
        ranks = sorted(int(r) for r in ranks)
        bad = [r for r in ranks if not 0 <= r < self._size]
        if bad:
            raise ValueError(f"new_group: ranks {bad} are outside the group 0 .. {self._size - 1}")
        if self._size > 1:
            # Checked like every collective, before the Split: a rank that skips new_group
            # (or passes other ranks) and calls a collective instead used to leave this rank
            # in Split for ever, and the other's timeout said "has not started any collective".
            # The ranks' CRC rides in the compared root field; the dims show the ranks.
            crc = zlib.crc32(np.asarray(ranks, dtype=np.int64).tobytes())
            seq, plan = self._begin("new_group", None, root=crc, shape=tuple(ranks))
            self._run(self._barrier(plan, seq, False), False, "new_group", seq, (), None)
        self._data_turn(None)  # Split is a collective on the communicator: in call order
        member = self._rank in ranks
        sub = self._comm.Split(0 if member else MPI.UNDEFINED, ranks.index(self._rank) if member else 0)
        if not member:
            return None
        return MPICommunicator(sub, [self.world_ranks[r] for r in ranks])

    @locked
    def free(self) -> None:
        try:
            self._data_turn(None)  # Free is collective: after every issued data step
        except Exception:  # noqa: BLE001 - freeing at shutdown is best effort
            pass
        check_before_free(self)  # raises if a peer waits for this rank instead of freeing
        self._finish_pending()
        self.destroyed = True  # every later call raises (_begin, _p2p_steps, new_group)
        self._watchdog = None
        LIVE.discard(self)
        BUSY.discard(self)
        try:
            self._board.free()
            self._side.Free()
            self._pairwise.Free()
            if self._comm is not mpi().COMM_WORLD:
                self._comm.Free()
        except Exception:  # noqa: BLE001 - freeing at shutdown is best effort
            pass

    def _finish_pending(self) -> None:
        """Complete this group's async calls before its MPI objects are freed (every peer is
        freeing too: ``check_before_free``), so a ``Work`` waited for afterwards returns at
        once; one still unfinished after the group's timeout fails with a CommError. (A
        wait after ``destroy_process_group(group)`` used to write to the freed window: a
        segmentation fault.)"""
        deadline = time.monotonic() + self._timeout
        while self._pending and time.monotonic() < deadline:
            self.progress()
            if self._pending:
                time.sleep(1e-4)
        for work in self._pending:
            work.done, work.req = True, None
            work.error = CommError(
                f"{work.call.op} (collective #{work.call.seq}) did not complete before "
                "destroy_process_group freed its group; wait for async work before "
                "destroying the group")
        self._pending = []

    def sends_pending_to(self, world_rank: int) -> bool:
        """Whether an async send of this rank to ``world_rank`` is still completing
        (``mpi_exit``: a peer's recv may still be matched by it)."""
        return any(w.call.op == "send" and w.call.peer == world_rank and not w.done
                   for w in self._pending)

    def destroyed_error(self, op: str) -> CommError:
        if self.destroyed == FORKED:
            return CommError(
                f"{op} in a process forked from rank {self.world_rank()} (pid {os.getpid()}: a "
                "DataLoader worker, or a multiprocessing child started with fork): collectives "
                "and send/recv run only in the rank's own process, which made the process group; "
                "here the call would never be matched and would wait for ever. Communicate in "
                "the training loop (the main process), or give the dataset what it needs "
                "before the DataLoader starts its workers")
        return CommError(
            f"{op} on a destroyed process group (rank {self.world_rank()}): "
            "destroy_process_group() freed this group, and an object made over it (a "
            "DistributedDataParallel model, a DeviceMesh, a Work, a group handle) still uses "
            "it. Make the call before destroy_process_group, or call init_process_group() / "
            "dist.new_group(ranks) again and build the object anew over the new group")

    def abort(self, code: int = 1) -> None:
        sys.stderr.flush()
        mpi().COMM_WORLD.Abort(code)
