"""The world's arrival-board slot, mirrored into a file that outlives the rank.

Why: a rank killed by a signal (SIGKILL, the OOM killer) cannot report, and Open MPI then
kills the other ranks inside their MPI calls, where no Python code runs; a job stopped by
``shardflow run --timeout`` is killed the same way, and so are the ranks that were waiting
when another rank raised and called ``MPI_Abort``. Only the launcher outlives them, and
before session 38 it could name the rank that failed but not what the others were waiting
in. Now each rank of ``shardflow run`` (``SHARDFLOW_FAILURE_DIR`` set) mirrors the fixed
part of its slot on the world's arrival board (``arrival.py``: the collective it last
started, the one it waits in, a sub-group's collective it waits in, its last send/recv, its
phase) into ``board-rank<R>.bin`` in the launcher's failure folder. The file is mapped into
memory: every write to the slot is also made in the map (plain stores, no system call),
and the kernel's page cache keeps it after the process is killed. The launcher reads the files when the job has ended (:func:`read_boards`) and prints
what every rank was doing (:func:`job_end_lines`).

File layout (native int64): :data:`MAGIC`, the world size, when the last wait started
(nanoseconds since the epoch), then the slot's first ``HEAD`` fields. The frequent writes
(a collective started, a wait begun or ended) store the same few fields into the map as
into the slot: measured 0.6-1.0 µs more per blocking collective (the board's own three
writes: 0.8-1.7 µs; a loaded 2-core machine); the rare ones (a send/recv posted, a sub-group's wait, the
exit phase) copy the fixed part (336 bytes). A
rank on another host writes into a folder the launcher does not read: it is left out.
"""

from __future__ import annotations

import mmap
import os
import time
from typing import NamedTuple

import numpy as np

from .. import _config
from . import arrival, callsig

MAGIC = 0x3153_4452_414F_4253  # "SBOARDS1", little-endian bytes
_HEADER = 3
_NAME = "board-rank{}.bin"  # not *.json: the launcher reads only those as root-cause records


class BoardFile:
    """This rank's mirror. The board stores into :attr:`q` / :attr:`bytes` (the slot's fixed
    part, laid out as on the board) next to its own slot, calls :meth:`copy` after a write
    of many fields, and :meth:`wait_started` when a wait begins."""

    def __init__(self, path: str, size: int):
        nbytes = (_HEADER + arrival.HEAD) * 8
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, nbytes)
            self._map = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        self._head = memoryview(self._map).cast("q")
        self._head[0], self._head[1] = MAGIC, size
        self.bytes = memoryview(self._map)[_HEADER * 8:]
        self.q = self.bytes.cast("q")

    @classmethod
    def for_rank(cls, rank: int, size: int) -> BoardFile | None:
        """The mirror of world rank ``rank`` under ``shardflow run`` (or ``mp.spawn``'s MPI
        job); None elsewhere, or when the folder cannot take it (a remote host: the
        launcher's folder is not there)."""
        folder = _config.board_dir()
        if not folder or size <= 1:
            return None
        try:
            return cls(os.path.join(folder, _NAME.format(rank)), size)
        except (OSError, ValueError):
            return None

    def copy(self, slot_bytes) -> None:
        """Copy the slot's fixed part (after a write of many fields)."""
        self.bytes[:] = slot_bytes[:arrival.HEAD * 8]

    def wait_started(self) -> None:
        """A wait (collective, sub-group or point-to-point) begins now: the launcher shows
        how long it lasted. Only read while the slot says the rank waits."""
        self._head[2] = time.time_ns()


class RankEnd(NamedTuple):
    """One rank's mirror, read by the launcher."""

    rank: int
    size: int
    state: arrival.RankState
    since: float  # when its last wait started (time.time()), 0.0 if it never waited


def read_boards(folder: str) -> dict[int, RankEnd]:
    """Every rank's mirror in ``folder`` (the ranks that wrote one), by world rank."""
    out: dict[int, RankEnd] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        if not (name.startswith("board-rank") and name.endswith(".bin")):
            continue
        try:
            rank = int(name[len("board-rank"):-len(".bin")])
            with open(os.path.join(folder, name), "rb") as f:
                row = np.frombuffer(f.read(), dtype=np.int64)
        except (OSError, ValueError):
            continue
        if len(row) < _HEADER + arrival.HEAD or int(row[0]) != MAGIC:
            continue
        size = int(row[1])
        state = arrival.decode_slot(row[_HEADER:], size)
        out[rank] = RankEnd(rank, size, state, int(row[2]) / 1e9)
    return out


EXITING = "exiting (its script had ended or called sys.exit())"  # a rank whose board says so


def _doing(end: RankEnd) -> tuple[str, int]:
    """What one rank was doing (``{waited}`` stands for how long), and the world collective
    it waited in (0: none)."""
    st = end.state
    if st.phase == arrival.PHASE_EXITING:
        return EXITING, 0
    if st.waiting > 0:
        what = st.sig.describe() if st.sig is not None and st.seq == st.waiting else "a collective"
        return (f"waiting{{waited}} in {what}, collective #{st.waiting} of the world group "
                f"({end.size} ranks)"), st.waiting
    if st.elsewhere:
        seq, size, ranks, sig = st.elsewhere
        shown = ", ".join(map(str, ranks)) + (", ..." if size > len(ranks) else "")
        what = sig.describe() if sig is not None else "a collective"
        return f"waiting{{waited}} in {what}, collective #{seq} of the group of ranks [{shown}]", 0
    if st.p2p[5]:
        op, peer, tag, count, dt, _, _ = st.p2p
        name = callsig.OPNAMES.get(op, "?")
        where = "to" if name == "send" else "from"
        peer_text = "any rank" if peer < 0 else f"rank {peer}"
        return (f"waiting{{waited}} in {name} {where} {peer_text} (tag {tag}, {count} elements "
                f"of {callsig.dtype_name(dt)})"), 0
    return f"in its own code, not in a collective or send/recv ({st.collective_text()})", 0


def _ranks_text(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks}"


def job_end_lines(boards: dict[int, RankEnd], failed_rank: int | None,
                  ended_at: float | None = None) -> list[str]:
    """``what each rank was doing when the job ended`` and a line per state (ranks in the
    same state share one, so a large world stays readable), the failing rank's first; for
    each world collective some ranks waited in, the ranks that had not started it. Empty
    when no rank left a mirror."""
    if not boards:
        return []
    ended_at = time.time() if ended_at is None else ended_at
    groups: dict[tuple, list[int]] = {}  # (failing?, text) -> ranks, in order of first rank
    longest: dict[tuple, float] = {}
    waits: dict[int, list[int]] = {}
    for rank in sorted(boards, key=lambda r: (r != failed_rank, r)):
        end = boards[rank]
        text, seq = _doing(end)
        key = (rank == failed_rank, text)
        groups.setdefault(key, []).append(rank)
        if end.since:
            longest[key] = max(longest.get(key, 0.0), ended_at - end.since)
        if seq:
            waits.setdefault(seq, []).append(rank)
    lines = ["what each rank was doing when the job ended (from its arrival board):"]
    for (failing, text), ranks in groups.items():
        key = (failing, text)
        waited = f" for {max(0.0, longest[key]):.1f} s" if key in longest else ""
        label = _ranks_text(ranks) + (" (the failing rank)" if failing else "")
        lines.append(f"  {label}: {text.format(waited=waited)}")
    size = max(end.size for end in boards.values())
    for seq, waiting in sorted(waits.items()):
        absent = [r for r in range(size) if r not in boards or boards[r].state.seq < seq]
        if absent:
            lines.append(f"  collective #{seq} of the world: {_ranks_text(waiting)} waited in it, "
                         f"{_ranks_text(absent)} never started it")
    return lines
