"""Point-to-point calls of the MPI backend (a mixin of
:class:`~shardflow.comm.mpi.MPICommunicator`).

``send`` posts the call signature (96 bytes, on the side communicator) and the data (on
the communicator), same tag. ``recv`` receives the signature first and posts the data
receive only when dtype and element count match: a truncated receive above the eager
limit corrupts memory (``mpi_plans.py``). On a mismatch it consumes the message into a
scratch buffer (so that it cannot match a later recv) and raises a CommError with both
shapes; the receive buffer is untouched. MPI matches receives from one (source, tag) in
the order they were posted, so the data receives are posted in call order whichever
handle is waited on first (``_recv_fifo``). Pending receives are advanced by every wait
(``mpi_work.progress_all``).

``recv(array, None)`` receives from any rank (torch's ``recv`` without ``src``): its signature
receive is posted with ``MPI_ANY_SOURCE``; the signature names the sender, and the data
receive is then posted from that rank, in its place among that (source, tag)'s receives by
posting order. A later receive from a given sender first advances the earlier any-source
receives of its tag (MPI matched them to earlier messages, so their signatures have
arrived), so it cannot take their data. The result (``wait()``'s value) is the sender's
group rank. Deviation: an any-source receive is not counted in the per-peer counters of the
arrival board, so a sender that exits early is found by the receiver's timeout.
"""

from __future__ import annotations

import numpy as np

from . import callsig
from . import profiling as _profiling
from .base import CommError, check_tag
from .mpi_buffers import contiguous, move_spec
from .mpi_lib import mpi
from .mpi_plans import H
from .mpi_work import BUSY, Call, MPIWork, locked


class _Both:
    """Two requests tested together (a send's signature and data messages)."""

    __slots__ = ("reqs",)

    def __init__(self, reqs):
        self.reqs = reqs

    def Test(self) -> bool:
        return mpi().Request.Testall(self.reqs)


class PointToPointMixin:
    """send / recv with signature checks (see the module docstring)."""

    @locked
    def send(self, array, dst: int, tag: int = 0, async_op: bool = False):
        return self._p2p("send", array, dst, tag, async_op)

    @locked
    def recv(self, array, src: int | None, tag: int = 0, async_op: bool = False):
        """Receive into ``array`` from group rank ``src``; ``src=None``: from any rank, and
        the result is the sender's group rank instead of ``array``."""
        return self._p2p("recv", array, src, tag, async_op)

    def _p2p(self, op, array, peer, tag, async_op):
        rec = _profiling.current
        if rec is None:
            return self._p2p_steps(op, array, peer, tag, async_op)
        with rec.span(op, "comm", bytes=array.nbytes, peer=peer, tag=tag, async_op=async_op):
            return self._p2p_steps(op, array, peer, tag, async_op)

    def _p2p_steps(self, op, array, peer, tag, async_op):
        if self.destroyed:
            raise self.destroyed_error(op)
        tag = check_tag(tag, op)
        if peer is None and op == "recv":
            return self._recv_any(array, tag, async_op)
        if not 0 <= peer < self._size:
            raise ValueError(f"{op}: peer rank {peer} is outside the group 0 .. {self._size - 1}")
        if peer == self._rank:
            raise ValueError(f"{op}: rank {self.world_rank()} cannot {op} to/from itself")
        self.p2p_seq += 1
        fields = callsig.fields(op, self.p2p_seq, None, array.dtype, array.size,
                                self.world_rank(), array.shape)
        self.board.p2p_started(op, peer, self.world_ranks[peer], tag, array.size, array.dtype)
        call = Call(op, self.p2p_seq, array.shape, array.dtype, self.world_ranks[peer], tag)
        if op == "send":
            work = MPIWork(self, self._send(array, peer, tag, fields), call)
        else:
            me: list = []
            work = MPIWork(self, self._recv(array, peer, tag, fields, me), call)
            me.append(work)
            self._recv_fifo.setdefault((peer, tag), []).append(work)
        return self._started(work, async_op)

    def _recv_any(self, array, tag, async_op):
        """A receive from any rank (see the module docstring)."""
        self.p2p_seq += 1
        fields = callsig.fields("recv", self.p2p_seq, None, array.dtype, array.size,
                                self.world_rank(), array.shape)
        self.board.p2p_started("recv", -1, -1, tag, array.size, array.dtype)
        call = Call("recv", self.p2p_seq, array.shape, array.dtype, -1, tag)
        me: list = []
        work = MPIWork(self, self._recv(array, None, tag, fields, me), call)
        me.append(work)
        return self._started(work, async_op)

    def _started(self, work, async_op):
        """An async call's Work (kept for progress until done), or a blocking call's result."""
        if async_op:
            if not work.done:
                self._pending.append(work)
                BUSY.add(self)
            return work
        return work.wait()

    def _send(self, array, dst, tag, fields):
        BYTE = mpi().BYTE
        sig = np.empty(H, dtype=np.uint8)
        callsig.PACKER.pack_into(sig, 0, *fields)
        data = move_spec(np.ascontiguousarray(array))
        side, comm = self._side, self._comm
        yield (lambda: _Both([side.Isend([sig, BYTE], dest=dst, tag=tag),
                              comm.Isend(data, dest=dst, tag=tag)])), None
        return None

    def _recv(self, array, src, tag, fields, me):
        BYTE = mpi().BYTE
        sig = np.zeros(H, dtype=np.uint8)
        side, comm = self._side, self._comm
        anysrc = src is None
        if anysrc:
            self._any_recvs.append(me)  # ``me`` is filled once the work exists
            yield (lambda: side.Irecv([sig, BYTE], source=mpi().ANY_SOURCE, tag=tag)), None
            src = self._any_arrived(me, sig, tag)
        else:
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
        buf, back = contiguous(array, fill=False)  # C order, whatever array's is
        data = move_spec(buf)
        yield (lambda: self._post_data(comm.Irecv, data, src, tag)), None
        if back is not None:
            back()
        return src if anysrc else array

    def _any_arrived(self, me, sig, tag) -> int:
        """An any-source recv's signature arrived: the sender's group rank; the recv takes
        its place, by posting order, among the receives from that sender and tag."""
        self._any_recvs.remove(me)
        work = me[0]
        world = callsig.CallSig.unpack(sig).root  # a send's root field is its world rank
        src = self.world_ranks.index(world)
        work.call.peer = world
        fifo = self._recv_fifo.setdefault((src, tag), [])
        at = next((i for i, w in enumerate(fifo) if w.call.seq > work.call.seq), len(fifo))
        fifo.insert(at, work)
        return src

    def _await_turn(self, key, work) -> None:
        """Let earlier recvs from the same (source, tag) post their data receive first."""
        for me in list(self._any_recvs):  # earlier any-source recvs of this tag go first
            if me and me[0] is not work and me[0].call.seq < work.call.seq \
                    and me[0].call.tag == key[1]:
                me[0].is_completed()
        fifo = self._recv_fifo[key]
        while fifo[0] is not work:
            head = fifo[0]
            head.is_completed()  # its signature arrived before ours: this posts its data recv
            if head.done and fifo and fifo[0] is head:
                fifo.pop(0)

    def _post_data(self, irecv, spec, src, tag):
        self._recv_fifo[(src, tag)].pop(0)  # this recv's turn is over: the next one may post
        return irecv(spec, source=src, tag=tag)

    def _p2p_mismatch(self, theirs, array, src, tag) -> CommError:
        return CommError(
            f"recv from rank {self.world_ranks[src]} (tag {tag}) on rank {self.world_rank()}: "
            f"rank {self.world_ranks[src]} sent {theirs.describe()} but this rank's recv "
            f"expects shape={tuple(array.shape)}, dtype={array.dtype} "
            f"({theirs.count} vs {array.size} elements). A send and its recv must have the same "
            "dtype and number of elements; nothing was written to the receive buffer."
        )
