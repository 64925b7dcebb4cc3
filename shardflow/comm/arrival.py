"""The arrival board: where every rank of a communicator is, readable without its help.

Each :class:`~shardflow.comm.mpi.MPICommunicator` owns a one-sided MPI window with one
slot of ``24 + 2 * size`` int64 per rank. A rank writes only its own slot, with plain local stores (no
communication, a few hundred nanoseconds per collective); a rank that is stuck reads the
others' slots with passive-target ``Rget`` (no help from them, bounded in time) to explain
why. Slot layout:

====  =====================================================================
 0    guard: sequence number of the signature below, written **last**
 1-12 call signature of the last collective started (``callsig.py``)
 13   guard: the same sequence number, written **first**
 14   sequence number of the collective being waited on (-1: none)
 15   pid
 16   phase: 0 running, 1 exiting (the interpreter is shutting down)
 17-21 last point-to-point call: op code (send/recv), peer, tag, element count, dtype
 22   1 while waiting on a point-to-point call
 23   number of point-to-point calls made
 24-41 (the world's board only) a collective of *another* group this rank waits in:
      its sequence number there (0: none; written last), the group's size, its first 4
      world ranks (-1 beyond), and its 12 signature fields (zeros if unknown). So a world
      timeout names what a missing rank does in a sub-group (session 36: it said only the
      rank's last world collective, e.g. the new_group that made the sub-group).
 42.. sends posted to each rank of the group (``size`` counters)
 ..   receives posted from each rank of the group (``size`` counters)
====  =====================================================================

The world's board is also mirrored, under ``shardflow run``, into a file that outlives a
killed rank (``board_file.py``): each write method also writes there.

The two guards make a torn read visible (a seqlock): a reader copies the slot in
ascending address order; the writer stores guard 13, then the signature, then guard 0.
Equal guards mean the signature belongs to that sequence number. Reports built from the
board are in this module too (timeouts of collectives and of point-to-point calls).
The module does not import mpi4py: the communicator hands it the ``MPI`` module.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import numpy as np

from . import callsig

HEAD = 42  # fixed part of a slot; per-peer message counters follow
PHASE_RUNNING, PHASE_EXITING = 0, 1
_G_LOW, _G_HIGH, _WAIT, _PID, _PHASE = 0, 13, 14, 15, 16
_P2P, _P2P_WAIT, _P2P_COUNT = 17, 22, 23
_ELSE, ELSE_RANKS = 24, 4  # a collective of another group being waited on (module docstring)
WAIT, ELSE, P2P_WAIT = _WAIT, _ELSE, _P2P_WAIT  # read by board_file's mirror
PEEK_TIMEOUT_S = 2.0
GROUP_LIMIT = "the group's timeout= or SHARDFLOW_COMM_TIMEOUT"  # where a wait's limit came from
CALL_LIMIT = "this call's timeout=: barrier(timeout=) or work.wait(timeout=)"


class RankState(NamedTuple):
    """One rank's slot, decoded."""

    seq: int  # last collective started (0: none yet)
    sig: callsig.CallSig | None  # its signature; None if none yet or the read was torn
    waiting: int  # collective being waited on, -1 if none
    pid: int
    phase: int
    p2p: tuple  # (op code, peer, tag, count, dtype code, waiting, number)
    sent: tuple = ()  # sends posted to each rank of the group
    received: tuple = ()  # receives posted from each rank of the group
    elsewhere: tuple = ()  # (seq, group size, first world ranks, CallSig | None) or ()

    def elsewhere_text(self) -> str:
        """``; now waits in all_reduce(...) as collective #1 of the group of ranks [0, 1]``."""
        if not self.elsewhere:
            return ""
        seq, size, ranks, sig = self.elsewhere
        shown = ", ".join(str(r) for r in ranks) + (", ..." if size > len(ranks) else "")
        what = sig.describe() if sig is not None else "a collective"
        return (f"; now waits in {what} as collective #{seq} of another group, of {size} ranks "
                f"[{shown}]")

    def p2p_text(self) -> str:
        op, peer, tag, count, dt, waiting, number = self.p2p
        if not number:
            return "has made no point-to-point call"
        name = callsig.OPNAMES.get(op, "?")
        where = "to" if name == "send" else "from"
        state = "waiting in it" if waiting else "completed"
        return (f"last point-to-point call: {name} {where} rank {peer} (tag {tag}, {count} "
                f"elements of {callsig.dtype_name(dt)}; {state})")

    def collective_text(self) -> str:
        if self.seq <= 0:
            return "has not started any collective"
        what = self.sig.describe() if self.sig is not None else "?"
        return f"last started collective #{self.seq} ({what})"


def decode_slot(row, size: int) -> RankState:
    """A slot (``HEAD + 2 * size`` int64, or only its first ``HEAD``: no counters) decoded."""
    row = [int(v) for v in row]
    seq = row[_G_LOW]
    sig = None
    if seq > 0 and row[_G_HIGH] == seq:
        sig = callsig.CallSig(*row[1:8], tuple(row[8:13]))
        if sig.seq != seq:
            sig = None
    n = size
    elsewhere = ()
    if row[_ELSE] > 0:
        gsize = row[_ELSE + 1]
        ranks = tuple(r for r in row[_ELSE + 2:_ELSE + 2 + min(gsize, ELSE_RANKS)])
        base = _ELSE + 2 + ELSE_RANKS
        other = callsig.CallSig(*row[base:base + 7], tuple(row[base + 7:base + 12]))
        elsewhere = (row[_ELSE], gsize, ranks, other if other.op else None)
    return RankState(seq, sig, row[_WAIT], row[_PID], row[_PHASE],
                     tuple(row[_P2P:_P2P + 5]) + (row[_P2P_WAIT], row[_P2P_COUNT]),
                     tuple(row[HEAD:HEAD + n]), tuple(row[HEAD + n:HEAD + 2 * n]),
                     elsewhere)


def _put_started(q, b, seq: int, sig: bytes) -> None:
    """Store collective ``seq``'s signature into a slot (``q`` its int64 view, ``b`` its
    bytes), guard 13 first and guard 0 last (the seqlock of the module docstring)."""
    q[_G_HIGH] = seq
    b[8:8 + callsig.NBYTES] = sig
    q[2] = seq  # the signature's sequence field
    q[_G_LOW] = seq


class ArrivalBoard:
    """This rank's slot (written locally) and reads of the others' (see the module docstring)."""

    def __init__(self, MPI, comm, mirror=None):
        self._MPI = MPI
        # the world's slot is mirrored into a file the launcher reads after a kill
        # (``board_file.py``); a factory, called with (rank, size), or None
        self._mirror = self._mq = self._mb = None
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._unreachable: set[int] = set()
        self.slot = HEAD + 2 * self.size
        self.win = None
        try:
            self.win = MPI.Win.Allocate(self.slot * 8, 8, comm=comm)
            mem = memoryview(self.win.tomemory()).cast("B")
            self.win.Lock_all(MPI.MODE_NOCHECK)  # one passive epoch for the window's life
        except Exception:  # noqa: BLE001 - no one-sided support: reports say "unknown"
            self.win = None
            mem = memoryview(bytearray(self.slot * 8))
        self.bytes = mem
        self.q = mem.cast("q")
        self.q[_WAIT] = -1
        self.q[_PID] = os.getpid()
        if mirror is not None:
            self._mirror = mirror(self.rank, self.size)
            if self._mirror is not None:
                self._mq, self._mb = self._mirror.q, self._mirror.bytes
            self._sync()

    def _sync(self) -> None:
        """Copy the slot to the mirror file, if any (after a write of many fields; the
        frequent writes store into the mirror directly)."""
        if self._mirror is not None:
            self._mirror.copy(self.bytes)

    # -- writes (local stores only) ------------------------------------------------------
    def started(self, seq: int, sig: bytes) -> None:
        """Collective ``seq`` started with signature ``sig`` (its own seq field 0 or ``seq``)."""
        _put_started(self.q, self.bytes, seq, sig)
        if self._mq is not None:
            _put_started(self._mq, self._mb, seq, sig)

    def waiting(self, seq: int) -> None:
        self.q[_WAIT] = seq
        mq = self._mq
        if mq is not None:
            mq[_WAIT] = seq
            if seq > 0:
                self._mirror.wait_started()

    def p2p_started(self, op: str, peer: int, peer_world: int, tag: int, count: int,
                    dtype) -> None:
        """A send/recv to/from group rank ``peer`` (``peer_world`` in the world) was posted."""
        q = self.q
        if peer >= 0:  # -1: a recv from any rank (not counted per peer)
            q[HEAD + peer + (0 if op == "send" else self.size)] += 1
        q[_P2P_COUNT] += 1
        q[_P2P] = callsig.OPCODES[op]
        q[_P2P + 1] = peer_world
        q[_P2P + 2] = tag
        q[_P2P + 3] = count
        q[_P2P + 4] = callsig.dtype_code(dtype)
        self._sync()

    def waiting_elsewhere(self, seq: int, size: int, world_ranks, sig_fields) -> None:
        """This rank waits in collective ``seq`` of another group (``seq`` <= 0: no longer);
        ``sig_fields``: that collective's 12 signature fields, or None if unknown."""
        q = self.q
        q[_ELSE] = 0  # invalid while the fields change
        if self._mq is not None:
            self._mq[_ELSE] = 0
        if seq <= 0:
            return
        q[_ELSE + 1] = size
        for i in range(ELSE_RANKS):
            q[_ELSE + 2 + i] = world_ranks[i] if i < len(world_ranks) else -1
        base = _ELSE + 2 + ELSE_RANKS
        for i in range(12):
            q[base + i] = 0 if sig_fields is None else sig_fields[i]
        q[_ELSE] = seq
        self._sync()
        if self._mirror is not None:
            self._mirror.wait_started()

    def p2p_waiting(self, flag: bool) -> None:
        self.q[_P2P_WAIT] = 1 if flag else 0
        mq = self._mq
        if mq is not None:
            mq[_P2P_WAIT] = 1 if flag else 0
            if flag:
                self._mirror.wait_started()

    def set_phase(self, phase: int) -> None:
        self.q[_PHASE] = phase
        self._sync()

    # -- reads ---------------------------------------------------------------------------
    def decode(self, row) -> RankState:
        return decode_slot(row, self.size)

    def mine(self) -> RankState:
        return self.decode(np.frombuffer(self.bytes, dtype=np.int64).copy())

    def peek(self, timeout: float = PEEK_TIMEOUT_S, ranks=None) -> list[RankState | None]:
        """Every rank's slot (None: unreachable within ``timeout`` or no window)."""
        ranks = range(self.size) if ranks is None else ranks
        out: dict[int, RankState | None] = {}
        reqs = {}
        MPI = self._MPI
        for r in ranks:
            if r == self.rank:
                out[r] = self.mine()
            elif self.win is None or r in self._unreachable:
                out[r] = None
            else:
                buf = np.zeros(self.slot, dtype=np.int64)
                try:
                    reqs[r] = (self.win.Rget([buf, MPI.INT64_T], r), buf)
                except Exception:  # noqa: BLE001 - best-effort diagnostics
                    out[r] = None
        end = time.monotonic() + timeout
        while reqs and time.monotonic() < end:
            for r, (req, buf) in list(reqs.items()):
                try:
                    done = req.Test()
                except Exception:  # noqa: BLE001
                    done, buf = True, None
                if done:
                    out[r] = None if buf is None else self.decode(buf)
                    del reqs[r]
            if reqs:
                time.sleep(1e-3)
        for r in reqs:  # a get that never completed: never ask that rank again
            self._unreachable.add(r)
            out[r] = None
        return [out[r] for r in ranks]

    def free(self) -> None:
        """Free the window. The slot is copied to process memory first, so a stray write
        after the free (a report, a late wait) stores there instead of into the freed window
        (it crashed the process)."""
        # the mirror keeps the state at the free; a later world of this rank maps the same
        # file anew, and a stray write of this freed board must not land there
        self._mirror = self._mq = self._mb = None
        if self.win is not None:
            local = bytearray(self.bytes)
            self.bytes = memoryview(local)
            self.q = self.bytes.cast("q")
            try:
                self.win.Unlock_all()
                self.win.Free()
            except Exception:  # noqa: BLE001 - freeing at shutdown is best effort
                pass
            self.win = None


# -- reports -------------------------------------------------------------------------------
def collective_timeout_report(*, rank: int, op: str, seq: int, size: int, shape, dtype,
                              waited: float, limit: float, states, world_ranks,
                              limit_source: str = GROUP_LIMIT) -> str:
    """Why collective ``seq`` did not complete: who did not arrive, who called what else."""
    missing, arrived, other, unknown = [], [], [], []
    mine = states[world_ranks.index(rank)] if rank in world_ranks else None
    for r, st in enumerate(states):
        wr = world_ranks[r]
        if st is None:
            unknown.append(f"rank {wr}")
        elif st.phase == PHASE_EXITING and st.seq < seq:
            missing.append(f"rank {wr} (exiting: it left its script after collective "
                           f"#{st.seq}; sys.exit() or the end of the script on that rank only)")
        elif st.seq < seq:
            missing.append(f"rank {wr} ({st.collective_text()}{st.elsewhere_text()})")
        elif (st.seq == seq and mine is not None and mine.sig is not None
              and st.sig is not None and st.sig[:6] != mine.sig[:6]):
            other.append(f"rank {wr}: {st.sig.describe()}")
        else:
            arrived.append(wr)
    lines = [
        f"shardflow: collective timed out on rank {rank}: {op} (collective #{seq} on a group "
        f"of {size}" + ("" if dtype is None else f", shape {tuple(shape)}, dtype {dtype}")
        + f") waited {waited:.1f} s (limit {limit:g} s: {limit_source})."
    ]
    if missing:
        lines.append(f"  ranks that did not arrive: {', '.join(missing)}")
    if other:
        lines.append(f"  ranks that called something else as collective #{seq}: "
                     + "; ".join(other))
    if unknown:
        lines.append(f"  ranks whose state could not be read: {', '.join(unknown)}")
    lines.append(f"  ranks that arrived: {arrived}")
    lines.append("  A rank that never calls the collective (different control flow, an "
                 "exception caught and ignored, a hang) or calls a different one blocks the "
                 "others. Aborting the whole job.")
    return "\n".join(lines) + "\n"


def p2p_timeout_report(*, rank: int, op: str, peer_world: int, tag: int, shape, dtype,
                       waited: float, limit: float, peer_state, others=(),
                       limit_source: str = GROUP_LIMIT) -> str:
    """Why a send/recv did not complete: what the peer is doing instead (for a recv from
    any rank, ``others``: ``(world rank, state)`` of every other rank)."""
    where = "from" if op == "recv" else "to"
    if peer_world < 0:  # recv(src=None)
        lines = [f"shardflow: recv from any rank (src=None) timed out on rank {rank} (tag {tag}, "
                 f"shape {tuple(shape)}, dtype {dtype}) after {waited:.1f} s (limit {limit:g} "
                 f"s: {limit_source}): no rank sent to it with this tag."]
        for wr, st in others:
            if st is None:
                lines.append(f"  rank {wr}: its state could not be read")
            else:
                exiting = " It is exiting (its script ended or called sys.exit())." \
                    if st.phase == PHASE_EXITING else ""
                lines.append(f"  rank {wr}: {st.p2p_text()}; {st.collective_text()}.{exiting}")
        lines.append("  Every recv needs a matching send with the same tag, dtype and number "
                     "of elements. Aborting the whole job.")
        return "\n".join(lines) + "\n"
    lines = [
        f"shardflow: {op} {where} rank {peer_world} timed out on rank {rank} (tag {tag}, shape "
        f"{tuple(shape)}, dtype {dtype}) after {waited:.1f} s (limit {limit:g} s: "
        f"{limit_source})."
    ]
    if peer_state is None:
        lines.append(f"  rank {peer_world}: its state could not be read")
    else:
        exiting = " It is exiting (its script ended or called sys.exit())." \
            if peer_state.phase == PHASE_EXITING else ""
        lines.append(f"  rank {peer_world}: {peer_state.p2p_text()}; "
                     f"{peer_state.collective_text()}.{exiting}")
        p_op, p_peer, p_tag, _, _, _, number = peer_state.p2p
        if (number and p_peer == rank and p_tag != tag
                and callsig.OPNAMES.get(p_op) == ("send" if op == "recv" else "recv")):
            lines.append(f"  The tags differ: rank {peer_world}'s {callsig.OPNAMES[p_op]} uses tag "
                         f"{p_tag}, this {op} tag {tag}; pass the same tag on both sides.")
        p_waiting = peer_state.p2p[5]
        if (number and p_waiting and p_peer == rank and callsig.OPNAMES.get(p_op) == op
                and op in ("send", "recv")):
            # head to head: each waits for the other to move first (session 38)
            verb = "receive from" if op == "recv" else "send to"
            lines.append(f"  A deadlock: rank {rank} and rank {peer_world} each wait to {verb} "
                         f"the other. One side must {'send' if op == 'recv' else 'receive'} "
                         "first (order the calls by rank), or post both directions at once "
                         "with isend/irecv or dist.batch_isend_irecv.")
    need = "send" if op == "recv" else "recv"
    lines.append(f"  Every {op} needs a matching {need} on rank {peer_world} with the same tag, "
                 "dtype and number of elements. Aborting the whole job.")
    return "\n".join(lines) + "\n"
