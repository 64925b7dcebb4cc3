"""``monitored_barrier(group, timeout, wait_all_ranks)``: torch's barrier with its own limit.

torch (gloo) raises on a rank whose barrier waited longer than ``timeout``, naming the ranks
that did not arrive: ``[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms`` (with
``wait_all_ranks=True`` every such rank: ``Ranks 1, 2 failed to pass ...``). shardflow did
the same as a plain barrier and ignored ``timeout`` (the group's timeout, 600 s by default,
ended the job instead). Here the barrier is issued asynchronously and polled until
``timeout``; then the ranks that have not reached it are read from the communicator's
arrival board and the RuntimeError names them. Without ``timeout`` it is a plain barrier
(the group's timeout applies, as torch's default is the group's).

Deviation: every rank that times out raises (torch's rank 0 raises this message, the others
a different one), and the barrier stays posted: a program that catches the error and goes
on is out of step with the rank that never came (torch's is too).
"""

from __future__ import annotations

import time


def _absent(g, seq: int) -> list[int] | None:
    """The global ranks of ``g`` that have not started collective ``seq`` (None: unknown)."""
    board = getattr(g, "board", None) or getattr(getattr(g, "_control", None), "board", None)
    if board is None:
        return None
    try:
        states = board.peek()
    except Exception:  # noqa: BLE001 - a report must not fail on an unreadable board
        return None
    ranks = getattr(g, "world_ranks", list(range(g.size)))
    return [ranks[r] for r, st in enumerate(states) if st is not None and st.seq < seq]


def monitored_barrier(g, timeout, wait_all_ranks: bool, barrier) -> None:
    """See the module docstring; ``g`` is the group's communicator, ``barrier`` the plain one."""
    if timeout is None:
        barrier()
        return
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    if not seconds > 0:
        raise ValueError(f"monitored_barrier(timeout={timeout!r}): the timeout must be positive, "
                         "e.g. datetime.timedelta(seconds=30)")
    work = g.barrier(async_op=True)
    seq = getattr(g, "seq", 0)
    deadline = time.monotonic() + seconds
    nap = 1e-4
    while not work.is_completed():
        if time.monotonic() > deadline:
            absent = _absent(g, seq)
            ms = int(round(seconds * 1000))
            me = f"[Rank {g.world_rank() if hasattr(g, 'world_rank') else g.rank}]: "
            if not absent:
                who = "Some rank (its state could not be read)" if absent is None else "A rank"
                raise RuntimeError(f"{me}{who} failed to pass monitoredBarrier in {ms} ms")
            shown = absent if wait_all_ranks else absent[:1]
            raise RuntimeError(
                f"{me}{'Ranks' if len(shown) > 1 else 'Rank'} {', '.join(map(str, shown))} failed "
                f"to pass monitoredBarrier in {ms} ms (every rank of the group must call "
                "monitored_barrier; that rank is behind, hangs, or took another path)")
        time.sleep(nap)
        nap = min(nap * 2, 0.01)
