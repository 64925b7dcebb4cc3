"""The world of one: a communicator with a single rank and no MPI (layer L2).

Plain ``python script.py`` runs on it. Each collective is what it means for one rank:
all_reduce / broadcast leave the data unchanged, all_gather adds a leading dim of 1,
reduce_scatter and all_to_all return the input; send/recv have no peer and raise.
"""

from __future__ import annotations

import pickle

from ..backend.xp import get_array_module
from .base import (
    CommError,
    Communicator,
    CompletedWork,
    ReduceOp,
    checked_reduce_op,
    pickled,
)


def gathered_alone(array, out=None):
    """all_gather on a world of one: ``array`` with a leading dim of 1 (written into ``out``,
    which may have any shape of as many elements, when given)."""
    if out is None:
        out = get_array_module(array).empty((1, *array.shape), dtype=array.dtype)
    out.reshape((1, *array.shape))[0] = array
    return out


def copied_alone(array, out=None):
    """reduce_scatter and all_to_all on a world of one: a copy of ``array`` (or ``out`` filled)."""
    if out is None:
        return array.copy()
    out[...] = array
    return out


class LocalCommunicator(Communicator):
    backend = "local"

    def __init__(self):
        self.seq = 0

    @property
    def rank(self) -> int:
        return 0

    @property
    def size(self) -> int:
        return 1

    def _done(self, value, async_op):
        self.seq += 1
        return CompletedWork(value) if async_op else value

    def all_reduce(self, array, op=ReduceOp.SUM, async_op: bool = False, root: int = -1):
        checked_reduce_op(op, array)
        return self._done(array, async_op)

    def broadcast(self, array, src: int = 0, async_op: bool = False):
        if src != 0:
            raise ValueError(f"broadcast src must be a rank of the group (0 .. 0), got {src}")
        return self._done(array, async_op)

    def all_gather(self, array, out=None, async_op: bool = False, root: int = -1):
        return self._done(gathered_alone(array, out), async_op)

    def reduce_scatter(self, array, op=ReduceOp.SUM, out=None, async_op: bool = False):
        ReduceOp.parse(op)
        return self._done(copied_alone(array, out), async_op)

    def all_to_all(self, array, out=None, async_op: bool = False):
        return self._done(copied_alone(array, out), async_op)

    def barrier(self, async_op: bool = False):
        return self._done(None, async_op)

    def send(self, array, dst: int, tag: int = 0, async_op: bool = False):
        raise CommError("send: a world of one has no peer; launch with `shardflow run -n 2 ...`")

    def recv(self, array, src: int, tag: int = 0, async_op: bool = False):
        raise CommError("recv: a world of one has no peer; launch with `shardflow run -n 2 ...`")

    def all_gather_object(self, obj) -> list:
        return [pickle.loads(pickled(obj, "all_gather_object", 0))]

    def broadcast_object(self, obj, src: int = 0):
        return obj

    def new_group(self, ranks):
        ranks = list(ranks)
        if ranks not in ([0], []):
            raise ValueError(f"new_group: ranks must be a subset of [0] in a world of one, got {ranks}")
        return self if ranks else None
