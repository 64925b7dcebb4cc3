"""The communication plan: every collective that global tensors run, recorded on demand.

``with comm_plan() as plan: <one training step>`` records each boxing's collective (the op
that asked for it, forward or backward, the collective, bytes this rank sends into it, and
the mesh dimension). ``print(plan)`` shows the table; ``plan.counts()`` sums it up.
``SHARDFLOW_DEBUG=plan`` makes ``shardflow train`` print the plan of its first step before
training on (the way to see what a layout costs before paying for it).

An op with no sbp rule for its arguments runs as gather -> compute -> re-shard
(``rules/fallback.py``); besides the collectives it causes (listed under the op's name), the
plan lists the op in ``plan.fallbacks`` and ``print(plan)`` names it, so a layout that moves
whole tensors is seen in the plan, not only in the one warning per op.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["CommPlan", "PlanEntry", "comm_plan", "record", "record_fallback"]


@dataclass(frozen=True)
class PlanEntry:
    phase: str  # "forward" | "backward"
    op: str  # the op (or boxing) that needed the collective
    collective: str  # all_reduce, all_gather, reduce_scatter, all_to_all
    nbytes: int  # bytes of this rank's input to the collective
    mesh_dim: int
    group_size: int


class CommPlan:
    def __init__(self):
        self.entries: list[PlanEntry] = []
        self.fallbacks: list[str] = []  # ops that ran as gather -> compute -> re-shard, in order

    def counts(self, phase: str | None = None) -> Counter:
        """``{collective: count}`` (of one phase, or both)."""
        return Counter(e.collective for e in self.entries if phase is None or e.phase == phase)

    def bytes(self, phase: str | None = None) -> int:
        return sum(e.nbytes for e in self.entries if phase is None or e.phase == phase)

    def __len__(self) -> int:
        return len(self.entries)

    def __str__(self) -> str:
        lines = [f"{'phase':9} {'op':28} {'collective':15} {'bytes':>12} {'mesh dim':>8} {'ranks':>5}"]
        for e in self.entries:
            lines.append(
                f"{e.phase:9} {e.op[:28]:28} {e.collective:15} {e.nbytes:12d} {e.mesh_dim:8d} "
                f"{e.group_size:5d}"
            )
        for phase in ("forward", "backward"):
            c = self.counts(phase)
            summary = ", ".join(f"{v} {k}" for k, v in sorted(c.items())) or "none"
            lines.append(f"{phase}: {summary}; {self.bytes(phase)} bytes")
        if self.fallbacks:
            lines.append("gather -> compute -> re-shard (no sbp rule): " + ", ".join(self.fallbacks))
        return "\n".join(lines)


_active: list[CommPlan] = []


def record(phase: str, op: str, collective: str, nbytes: int, mesh_dim: int, group_size: int) -> None:
    if _active and group_size > 1:
        entry = PlanEntry(phase, op, collective, int(nbytes), mesh_dim, group_size)
        for plan in _active:
            plan.entries.append(entry)


def record_fallback(op: str) -> None:
    """Note that ``op`` ran as gather -> compute -> re-shard (recorded on one rank too)."""
    for plan in _active:
        plan.fallbacks.append(op)


@contextmanager
def comm_plan():
    """Record the collectives global tensors run inside the block (forward and backward)."""
    plan = CommPlan()
    _active.append(plan)
    try:
        yield plan
    finally:
        _active.remove(plan)
