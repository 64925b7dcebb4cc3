"""``CountingProcessGroup``: a process group that counts the bytes handed to each collective.

Wraps a communicator (``shardflow.comm``; what ``dist.new_group`` and the world are) and
forwards every call; ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter`` and
``all_to_all`` first add ``array.nbytes`` of their input to ``bytes[op]`` and ``calls[op]``.
This is what a rank *hands to* the comm layer, the figure compression changes; what the
transport then moves depends on the algorithm (a ring all-reduce moves about
``2 (W-1)/W`` times it per rank). Pass it as ``DistributedDataParallel(process_group=...)``
and as the hook's state (or ``PowerSGDState(process_group=...)``) to count a DDP run.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["CountingProcessGroup"]

_COUNTED = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all")


class CountingProcessGroup:
    def __init__(self, group):
        self._group = group
        self.bytes: Counter = Counter()
        self.calls: Counter = Counter()

    def reset(self) -> None:
        self.bytes.clear()
        self.calls.clear()

    def total_bytes(self, *ops: str) -> int:
        """Bytes handed to the given collectives (all of them when none is named)."""
        return sum(v for k, v in self.bytes.items() if not ops or k in ops)

    def __getattr__(self, name):
        attr = getattr(self._group, name)
        if name not in _COUNTED:
            return attr

        def counted(array, *args, **kwargs):
            self.bytes[name] += int(array.nbytes)
            self.calls[name] += 1
            return attr(array, *args, **kwargs)

        return counted

    @property
    def rank(self) -> int:
        return self._group.rank

    @property
    def size(self) -> int:
        return self._group.size
