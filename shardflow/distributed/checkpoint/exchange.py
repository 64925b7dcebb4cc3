"""The checkpoint's object exchanges, each tagged with the step of the call it belongs to
(layer L6).

``dcp.save`` and ``dcp.load`` are collectives over the group: their steps exchange Python
objects (plans, results, error strings) with ``all_gather_object`` / ``broadcast_object``.
Those match any other object collective, so a rank in ``dcp.save`` while another is in
``dcp.load`` (a save on rank 0 only, followed by a load on every rank) used to complete the
exchange and read the other call's objects: obscure ``TypeError``\\ s ("string indices must
be integers", "unhashable type: 'dict'") on both ranks. Each object now travels with its
step's name ("dcp.save (plans)", ...); ranks whose steps differ all raise the same
``CheckpointException`` naming each rank's step and the fix, before anything is written or
loaded. A broadcast's receivers check the root's step (the root learns of a mismatch at the
next exchange, or the receivers' error ends the job).
"""

from __future__ import annotations

from .metadata import CheckpointException


def _mismatch(steps: dict) -> CheckpointException:
    said = "; ".join(f"rank {r}: {s}" for r, s in steps.items())
    return CheckpointException(
        f"the ranks are not in the same checkpoint call ({said}): dcp.save and dcp.load are "
        "collectives over the process group; call each on every rank of the group, in the "
        "same order (e.g. not `if rank == 0: dcp.save(...)`: every rank saves its part, and "
        "only one writes each replicated tensor). Nothing was written or loaded by this call.",
        {r: f"in {s}" for r, s in steps.items()})


def all_gather(group, step: str, obj) -> list:
    """``group.all_gather_object(obj)``, raising on every rank if the ranks' steps differ."""
    got = group.all_gather_object((step, obj))
    steps = {r: g[0] if isinstance(g, tuple) and len(g) == 2 else repr(g)[:80]
             for r, g in enumerate(got)}
    if len(set(steps.values())) > 1:
        raise _mismatch(steps)
    return [o for _, o in got]


def broadcast(group, step: str, obj, root: int):
    """``group.broadcast_object(obj, root)``; a receiver in another step raises."""
    got = group.broadcast_object((step, obj), root)
    theirs = got[0] if isinstance(got, tuple) and len(got) == 2 else repr(got)[:80]
    if theirs != step:
        raise _mismatch({root: theirs, group.rank: step})
    return got[1]
