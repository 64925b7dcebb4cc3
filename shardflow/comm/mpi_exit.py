"""Leaving MPI at interpreter exit without hanging the job (layer L2).

``MPI_Finalize`` is collective in Open MPI: a rank that reaches the end of its script (or
calls ``sys.exit(1)``) blocks in it until every rank does. When another rank is waiting
for this one in a collective, that is a deadlock that only the collective timeout ends
(600 s by default), and the report then blames the waiting rank ("rank 0 timed out, exit
124") instead of the one that left. Python does not tell an exit hook the exit code, so
this module decides from the arrival boards instead:

1. mark this rank ``exiting`` on every live communicator's board;
2. poll the other ranks' slots (passive reads, naps growing to 50 ms):

   * every other rank is exiting too -> the job is ending normally: ``MPI_Finalize``;
   * some rank waits on a collective this rank never started, or waits in a send/recv and
     has posted more recvs from (sends to) this rank than this rank posted sends to (recvs
     from) it (the per-peer counters of the board), or has waited 3 s in a recv
     from this rank while no send of this rank to it is pending (the tags differ: the
     counters agree) -> this exit is premature: print which rank waits where, and return **without**
     ``MPI_Finalize``. The process then exits with its own exit code, and mpiexec, seeing a
     rank exit without finalising, reports that rank and its exit code and ends the job;
   * a board cannot be read (no one-sided support, a peer that does not answer) ->
     ``MPI_Finalize`` as before (no worse than without this module).

A rank that is still computing (neither exiting nor waiting on us) is waited for: that is
the normal end of a job whose ranks finish at different times. While it polls, the rank
keeps progressing its own pending async calls (a peer may wait on one never waited for).

``destroy_process_group`` runs the same poll first (:func:`check_before_free`): freeing is
collective too, and a rank that frees while a peer waits for it raises a ``CommError``
naming that peer and its call instead of blocking in ``MPI_Win_free``.
"""

from __future__ import annotations

import time
import weakref

from . import callsig
from .arrival import PHASE_EXITING, PHASE_RUNNING
from .failure import print_failure, say_lifecycle

BEFORE_FINALIZE: list = []  # callables run first at exit (mpi_progress.stop)
# world.set_data_parallel keeps this up to date (world imports this module, not the reverse:
# comm's modules import no cycle, tests/test_comm_structure.py)
DATA_PARALLEL = [False]
LIVE: weakref.WeakSet = weakref.WeakSet()  # the MPI communicators whose boards are read
# why this rank exits, when a wrapper knows better than "its script ended" (mp.spawn's
# child: its function raised); [None]: the script ended or called sys.exit()
EXIT_CAUSE: list = [None]
# how long a peer must stay in the same recv from this leaving rank, with no send of ours
# still pending to it, before that recv counts as one nothing will match (a recv whose
# message has arrived completes within microseconds of its next poll)
STUCK_RECV_S = 3.0


def _stuck_recv(c, r: int, st, mine) -> str | None:
    """Why peer ``r`` of ``c`` waits in a recv from this rank that no send will match, or
    None. The per-peer counters cannot see it when the numbers agree but the tags do not
    (session 38: rank 0 sent with tag 1 and exited, rank 1 waited in ``recv(tag=2)`` until
    the timeout): this rank is leaving ``c``, so it sends nothing more there."""
    op, peer, tag, count, dt, waiting, _ = st.p2p
    if not waiting or callsig.OPNAMES.get(op) != "recv" or peer != c.world_rank():
        return None
    if c.sends_pending_to(c.world_ranks[r]):  # an isend of ours still completing
        return None
    m_op, m_peer, m_tag, m_count, m_dt, _, m_number = mine.p2p
    text = (f"rank {c.world_ranks[r]} waits in recv from rank {peer} (tag {tag}, {count} "
            f"elements of {callsig.dtype_name(dt)}), which no send of rank {peer} matches "
            f"(it sent {mine.sent[r]} message(s) to rank {c.world_ranks[r]}")
    if m_number and callsig.OPNAMES.get(m_op) == "send" and m_peer == c.world_ranks[r]:
        text += (f", the last with tag {m_tag}, {m_count} elements of "
                 f"{callsig.dtype_name(m_dt)}")
        if m_tag != tag:
            text += "; the tags differ: pass the same tag to the send and its recv"
    return text + ")"


def _premature(communicators, leaving=None, tick=None) -> str | None:
    """Poll until every peer is exiting (None) or one waits for this rank (the reason).

    ``leaving``: the communicators whose peers must all be exiting (default: all of them);
    a peer of any of ``communicators`` that waits for this rank is a reason. ``tick`` is
    called on every round (progress of this rank's pending async operations).
    Returns ``"unknown"`` when a board cannot be read.
    """
    leaving = communicators if leaving is None else leaving
    nap = 1e-3
    stuck: dict = {}  # (communicator, peer) -> (its p2p call number, first seen), _stuck_recv
    while True:
        everyone_exiting = True
        boards = [(c, c.board.peek()) for c in communicators]
        # A peer marks itself exiting on every communicator *it* still holds; its copy of a
        # smaller group may have been freed or garbage-collected, and that board then never
        # says so. Exiting on any shared board means exiting (it waits for no one).
        exiting = {c.world_ranks[r] for c, peek in boards for r, st in enumerate(peek)
                   if st is not None and st.phase == PHASE_EXITING}
        for c, peek in boards:
            me, my_world = c.rank, c.world_rank()
            mine = c.board.mine()
            for r, st in enumerate(peek):
                if r == me:
                    continue
                if st is None:
                    return "unknown"
                if st.phase == PHASE_EXITING or c.world_ranks[r] in exiting:
                    continue
                if c in leaving:
                    everyone_exiting = False
                wr = c.world_ranks[r]
                if st.waiting > c.seq:
                    what = st.sig.describe() if st.sig is not None and st.seq == st.waiting \
                        else "a collective"
                    return (f"rank {wr} waits for it in {what} (collective #{st.waiting} on a "
                            f"group of {c.size}); this rank's last was #{c.seq}")
                if st.p2p[5] and st.received and st.received[me] > mine.sent[r]:
                    return (f"rank {wr} waits in a point-to-point call and has posted "
                            f"{st.received[me]} recv(s) from rank {my_world}, which sent it "
                            f"{mine.sent[r]} message(s)")
                if st.p2p[5] and st.sent and st.sent[me] > mine.received[r]:
                    return (f"rank {wr} waits in a point-to-point call and has posted "
                            f"{st.sent[me]} send(s) to rank {my_world}, which posted "
                            f"{mine.received[r]} recv(s) from it")
                why = _stuck_recv(c, r, st, mine) if c in leaving else None
                if why is None:
                    stuck.pop((id(c), r), None)
                else:  # the same recv for STUCK_RECV_S: nothing will match it
                    seen = stuck.get((id(c), r))
                    now = time.monotonic()
                    if seen is None or seen[0] != st.p2p[6]:
                        stuck[(id(c), r)] = (st.p2p[6], now)
                    elif now - seen[1] >= STUCK_RECV_S:
                        return why
        if everyone_exiting:
            return None
        if tick is not None:
            tick()
        time.sleep(nap)
        nap = min(nap * 2, 0.05)


def finalize_at_exit(MPI) -> None:
    """The ``atexit`` hook ``mpi_lib.mpi()`` registers when it initialises MPI."""
    say_lifecycle("ended")  # the program ended normally (shardflow run checks every rank did)
    for stop in BEFORE_FINALIZE:  # the background progress thread: no MPI call after this
        stop()
    try:
        if MPI.Is_finalized():
            return
        comms = [c for c in list(LIVE) if c.size > 1 and c.board.win is not None]
        for c in comms:
            c.board.set_phase(PHASE_EXITING)
        # an async call never waited for still completes
        reason = _premature(comms, tick=comms[0].progress_pending) if comms else None
    except Exception:  # noqa: BLE001 - never let exit-time diagnostics block finalising
        reason = "unknown"
    if reason is not None and reason != "unknown":
        rank = MPI.COMM_WORLD.Get_rank()
        print_failure(
            f"shardflow: rank {rank} is exiting ({EXIT_CAUSE[0] or 'its script ended or called sys.exit()'}) while "
            f"{reason}. Ending without MPI_Finalize so that mpiexec reports this rank's exit "
            "code and stops the job, instead of every rank waiting for the collective "
            "timeout." + uneven_hint() + "\n", rank)
        return
    MPI.Finalize()


def uneven_hint() -> str:
    """Under data parallel, the usual cause of a rank waiting for one that finished (and of
    a gradient all-reduce meeting another collective, ``mpi.py``'s mismatch report): uneven
    numbers of batches (torch hangs there; its fix is ``join()``)."""
    if not DATA_PARALLEL[0]:
        return ""
    return (" Under DistributedDataParallel this is usually uneven inputs (a rank ran out of "
            "batches while the others still train): wrap the training loop in `with "
            "model.join():`, or give every rank the same number of batches "
            "(DistributedSampler over one dataset of the same length on every rank).")


def check_before_free(comm) -> None:
    """Called by ``destroy_process_group`` (``MPICommunicator.free``) before the collective
    frees: raise if a peer waits for this rank instead of freeing too.

    Freeing a communicator's window and communicators is collective. A rank that reached
    ``destroy_process_group`` while another waits for it in a collective it skipped used to
    block in ``MPI_Win_free``; the waiting rank's timeout then said the freeing rank "has not
    started any collective". This marks the rank exiting on ``comm``'s board and polls, as at
    exit: every peer of ``comm`` freeing (or exiting) too -> return and free; a peer of any
    live communicator waiting for this rank -> ``CommError`` naming it (uncaught, it ends
    the job with this rank's traceback); a board that cannot be read -> return (as before).
    """
    from .base import CommError

    if comm.size <= 1 or comm.board.win is None:
        return
    comms = [c for c in list(LIVE) if c.size > 1 and c.board.win is not None]
    try:
        comm.board.set_phase(PHASE_EXITING)
        # an async call never waited for must still progress: a peer may wait on it
        reason = _premature(comms, leaving=[comm], tick=comm.progress_pending)
    except Exception:  # noqa: BLE001 - diagnostics must never stop the free itself
        return
    if reason is None or reason == "unknown":
        return
    comm.board.set_phase(PHASE_RUNNING)
    raise CommError(
        f"destroy_process_group on rank {comm.world_rank()} while {reason}. Freeing a process "
        "group is collective: every rank must make the same collectives and point-to-point "
        "calls before destroy_process_group; make the ranks' control flow agree (this rank "
        "skipped the call the other waits in, or the other made one too many)." + uneven_hint())
