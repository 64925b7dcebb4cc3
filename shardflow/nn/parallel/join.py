"""Uneven inputs under DistributedDataParallel: ``with model.join(): ...`` (PyTorch's semantics).

A rank that runs out of batches leaves its loop and waits in the context's ``__exit__``;
the other ranks keep training. So that nobody hangs, the finished ("joined") rank shadows
every collective of each iteration the others still run, contributing zeros.

Communication plan, per iteration of the ranks still training (*active*):

1. ``forward`` (active ranks): one all_reduce(SUM) of an int64 vector ``[a_0 .. a_{W-1},
   s]``: ``a_r = 1`` for this rank (it has not joined), ``s = 1`` if this iteration's backward
   will reduce gradients (grad mode on, not in ``no_sync``). Joined ranks contribute zeros.
   Everyone learns who is active and whether the backward reduces.
2. ``broadcast_buffers``: buffers are broadcast from the highest active rank (rank 0 may
   have joined and hold stale buffers; PyTorch does the same).
3. backward: one all_reduce(SUM) per gradient bucket piece (``Reducer``: pieces of at most
   1 MB), in bucket and piece order. Joined ranks all-reduce zero pieces of the same sizes
   in the same order. Gradients are divided by
   the initial world size (``divide_by_initial_world_size=True``, PyTorch's default: a
   joined rank counts as a zero gradient) or by the number of active ranks.

A joined rank loops on step 1; when the vector comes back all zero, every rank has joined.
Then the model of the *last joiner* (a rank that never had to shadow; the highest such
rank) is broadcast to all (one all_reduce(MAX) to agree on it, then a broadcast per
parameter and buffer), because the joined ranks skipped the optimizer steps of the
shadowed iterations. With ``throw_on_early_termination=True`` the first iteration in which
some rank has joined raises on every rank instead (PyTorch's messages).

Under torch's generic ``Join([ddp, optimizer, ...])`` (``distributed/algorithms/join.py``) the
same object serves as DDP's join hook (:class:`DDPJoinHook`): the generic context runs the
loop (its own heartbeat all-reduce, then every joinable's ``main_hook``), ``main_hook`` is one
pass of the joined rank's loop body above (:meth:`Join.shadow_iteration`), ``post_hook`` the
final model's broadcast; ``heartbeat`` is the generic context's notice, sent before step 1
when DDP is its first joinable (torch's ``Join.notify_join_context``).

A collective of the program's own inside the block (an all_reduce of the loss for logging)
is not shadowed (torch hangs on it): with uneven inputs it meets a joined rank's step 1,
which the comm layer reports as a collective mismatch on every rank. That error, raised in
the block or in the joined rank's shadowing, gets a note (:data:`UNSHADOWED_NOTE`, Python
3.11's ``add_note``) naming the cause and the fix (session 36; the generic ``Join`` too).
"""

from __future__ import annotations

import numpy as np

from ...autograd import is_grad_enabled
from ...comm import CommError

UNSHADOWED_NOTE = (
    "This collective ran inside `with model.join():` (uneven inputs). A rank whose inputs "
    "ran out shadows only DistributedDataParallel's own collectives (each forward's all_reduce "
    "of int64 flags, the gradient buckets), so a collective of your own in the loop (e.g. an "
    "all_reduce of the loss for logging) meets those calls instead of its peer's. Make your "
    "own collectives after the join block, or only in iterations every rank runs "
    "(torch.distributed hangs on them).")
# torch's generic ``Join([...])`` (distributed/algorithms/join.py): the same cause
GENERIC_UNSHADOWED_NOTE = UNSHADOWED_NOTE.replace(
    "`with model.join():`", "`with Join([...]):`").replace(
    "DistributedDataParallel's own collectives (each forward's all_reduce of int64 flags, the "
    "gradient buckets)", "the joinables' collectives (the context's all_reduce, then each "
    "joinable's join hook)")


def note_unshadowed(exc, note: str = UNSHADOWED_NOTE) -> None:
    """Add ``note`` to a collective mismatch raised inside a join block."""
    if (isinstance(exc, CommError) and "collective mismatch" in str(exc)
            and hasattr(exc, "add_note") and note not in getattr(exc, "__notes__", ())):
        exc.add_note(note)


class Join:
    """The context manager returned by ``DistributedDataParallel.join()``."""

    def __init__(self, ddp, divide_by_initial_world_size: bool = True, enable: bool = True,
                 throw_on_early_termination: bool = False):
        self.ddp = ddp
        self.divide_by_initial_world_size = bool(divide_by_initial_world_size)
        self.enable = bool(enable)
        self.throw_on_early_termination = bool(throw_on_early_termination)
        self._zeros = None
        self.heartbeat = None  # the generic Join's notice (module docstring), or None

    def __enter__(self):
        if self.enable:
            if self.ddp._join is not None:
                raise RuntimeError("DistributedDataParallel.join() contexts cannot be nested")
            self.ddp.__dict__["_join"] = self
        return self

    # -- active ranks ----------------------------------------------------------------
    def _flags(self, active: bool, syncing: bool) -> np.ndarray:
        pg = self.ddp.process_group
        flags = np.zeros(pg.size + 1, dtype=np.int64)
        if active:
            flags[pg.rank] = 1
            flags[-1] = 1 if syncing else 0
        pg.all_reduce(flags, "sum")
        return flags

    def notify_forward(self) -> int:
        """Step 1 for an active rank; returns the rank buffers are broadcast from."""
        ddp = self.ddp
        pg = ddp.process_group
        syncing = ddp.reducer.require_sync and is_grad_enabled()
        if self.heartbeat is not None:
            self.heartbeat()
        flags = self._flags(True, syncing)
        active = int(flags[:-1].sum())
        if self.throw_on_early_termination and active < pg.size:
            raise RuntimeError("Detected at least one rank that exhausted inputs. "
                               "Throwing across all ranks.")
        ddp.reducer.divide_by = pg.size if self.divide_by_initial_world_size else active
        return int(np.flatnonzero(flags[:-1])[-1])

    # -- joined ranks ----------------------------------------------------------------
    def __exit__(self, exc_type, exc, tb):
        if not self.enable:
            return False
        self.leave()
        if exc_type is not None:
            note_unshadowed(exc)
            return False  # the exception propagates; no shadowing (PyTorch's behaviour)
        pg = self.ddp.process_group
        is_last_joiner = True
        try:
            while self.shadow_iteration():
                if self.throw_on_early_termination:
                    raise RuntimeError(f"Rank {pg.rank} exhausted all inputs.")
                is_last_joiner = False
        except CommError as e:
            note_unshadowed(e)
            raise
        self._sync_final_model(is_last_joiner)
        return False

    def leave(self) -> None:
        """This rank's loop is over: DDP's forward no longer sends step 1 as an active rank."""
        self.ddp.__dict__["_join"] = None
        self.ddp.reducer.divide_by = None

    def shadow_iteration(self) -> bool:
        """One pass of a joined rank: step 1 with zeros; if some rank is still active, the
        buffers' broadcast and (when that iteration's backward reduces) zero buckets.
        Returns whether some rank was still active."""
        ddp = self.ddp
        flags = self._flags(False, False)
        active = flags[:-1]
        if not active.any():
            return False
        if self.throw_on_early_termination:
            return True  # the caller raises: no shadowing
        if ddp.broadcast_buffers and ddp.process_group.size > 1:
            ddp._broadcast_buffers(int(np.flatnonzero(active)[-1]))
        if flags[-1]:
            self._shadow_backward()
        return True

    def _shadow_backward(self) -> None:
        """Zero buckets all-reduced in the order the active ranks' backward reduces them."""
        pg = self.ddp.process_group
        buckets = self.ddp.reducer.buckets
        if self._zeros is None:
            self._zeros = [np.zeros_like(b.flat) for b in buckets]
        for z, b in zip(self._zeros, buckets):
            for lo, hi in b.pieces:  # the active ranks reduce each bucket piece by piece
                z[lo:hi] = 0
                pg.all_reduce(z[lo:hi], "sum")

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        ddp = self.ddp
        pg = ddp.process_group
        if pg.size == 1:
            return
        cand = np.array([pg.rank if is_last_joiner else -1], dtype=np.int64)
        pg.all_reduce(cand, "max")
        src = int(cand[0])
        for t in list(ddp.module.parameters()) + [b for b in ddp.module.buffers() if b is not None]:
            pg.broadcast(t.array, src)
            t._version_counter[0] += 1


class DDPJoinHook:
    """DistributedDataParallel's join hook for torch's generic ``Join`` (module docstring):
    ``main_hook`` shadows one iteration, ``post_hook`` broadcasts the last joiner's model.
    (It has the methods of ``distributed.algorithms.join.JoinHook``, which lies above this
    layer.)"""

    def __init__(self, ddp, divide_by_initial_world_size: bool = True):
        self.ddp = ddp
        self.divide_by_initial_world_size = bool(divide_by_initial_world_size)
        self.context = None  # the Join of this context, made by enter()

    def enter(self, enable: bool, heartbeat) -> None:
        """The generic context starts: DDP's forward notifies it (and ``heartbeat``, the
        generic context's notice, when DDP is its first joinable)."""
        # torch's generic Join raises on early termination itself (its heartbeat), so DDP's
        # own check stays off here
        self.context = Join(self.ddp, self.divide_by_initial_world_size, enable, False)
        self.context.heartbeat = heartbeat
        self.context.__enter__()

    def leave(self) -> None:
        """This rank's loop is over (or raised): DDP's forward is plain again."""
        if self.context is not None and self.context.enable and self.ddp._join is self.context:
            self.context.leave()

    def main_hook(self) -> None:
        self.context.shadow_iteration()

    def post_hook(self, is_last_joiner: bool) -> None:
        self.context._sync_final_model(is_last_joiner)
