"""``RankedMixin``: ``rank``, ``size`` and ``world_rank`` of a communicator that keeps
``_rank``, ``_size`` and ``world_ranks`` (the group's world rank of each of its ranks);
shared by the MPI and NCCL communicators."""

from __future__ import annotations

__all__ = ["RankedMixin", "CallableInt"]


class CallableInt(int):
    """An int that returns itself when called: a communicator's ``rank`` and ``size`` are
    ints inside shardflow (``comm.size``) and methods on PyTorch's ``ProcessGroup``
    (``dist.group.WORLD.size()``, ``pg.rank()``); this serves both spellings."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


class RankedMixin:
    @property
    def rank(self) -> int:
        return CallableInt(self._rank)

    @property
    def size(self) -> int:
        return CallableInt(self._size)

    def world_rank(self, r: int | None = None) -> int:
        """The world rank of group rank ``r`` (default: this rank)."""
        return self.world_ranks[self._rank if r is None else r]
