"""``RankedMixin``: ``rank``, ``size`` and ``world_rank`` of a communicator that keeps
``_rank``, ``_size`` and ``world_ranks`` (the group's world rank of each of its ranks);
shared by the MPI and NCCL communicators."""

from __future__ import annotations

__all__ = ["RankedMixin"]


class RankedMixin:
    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self._size

    def world_rank(self, r: int | None = None) -> int:
        """The world rank of group rank ``r`` (default: this rank)."""
        return self.world_ranks[self._rank if r is None else r]
