"""``send_object_list`` / ``recv_object_list``: point-to-point of picklable objects (layer L6).

Protocol (torch's): the sender pickles each object and sends one int64 array of the pickles'
sizes (one per object), then one uint8 array of the pickles back to back. The receiver's
sizes buffer has ``len(object_list)`` entries, so a receiver whose list length differs from
the sender's gets the comm layer's bounded, named mismatch error instead of wrong objects.
Received objects are unpickled and written into ``object_list[i]`` in place. Both messages are
host arrays (over MPI, also on an NCCL group: its control channel). Like torch, unpickling
runs code from the peer: receive only from ranks you trust. A rank outside ``group`` returns
at once (``recv_object_list`` returns -1), as torch.
"""

from __future__ import annotations

import pickle

import numpy as np

from ..comm import Communicator

__all__ = ["send_object_list", "recv_object_list"]


def _resolve(group, rank, group_rank, what):
    from . import GroupMember, _group, _group_rank  # the package's helpers, defined before

    if group is GroupMember.NON_GROUP_MEMBER:
        return None, None

    g: Communicator = _group(group)
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: pass either the global rank or the group rank, not both")
        return g, int(group_rank)
    if rank is None:
        raise ValueError(f"{what}: pass the peer's rank (a global rank) or its group rank")
    return g, _group_rank(g, int(rank))


def send_object_list(object_list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Send the picklable objects of ``object_list`` to ``dst`` (a global rank), which calls
    :func:`recv_object_list` with a list of the same length. ``device`` is accepted and
    unused: the bytes travel as host memory."""
    g, peer = _resolve(group, dst, group_dst, "send_object_list")
    if g is None:
        return
    if peer == g.rank:
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    blobs = [pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL) for o in object_list]
    if not blobs:
        raise ValueError("send_object_list: object_list is empty; pass at least one object")
    g.send(np.array([len(b) for b in blobs], dtype=np.int64), peer, 0)  # (n,) sizes
    g.send(np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(), peer, 0)  # (sum sizes,)


def recv_object_list(object_list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receive ``len(object_list)`` objects sent by :func:`send_object_list` from ``src``
    into ``object_list`` (in place); returns the sender's global rank. ``src=None``
    (any sender) is not supported: pass the sender's rank."""
    if src is None and group_src is None:
        raise ValueError("recv_object_list(src=None) (receive from any rank) is not supported; "
                         "pass the sender's rank")
    g, peer = _resolve(group, src, group_src, "recv_object_list")
    if g is None:
        return -1
    if peer == g.rank:
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    if not len(object_list):
        raise ValueError("recv_object_list: object_list is empty; pass one slot per object "
                         "sent (e.g. [None] * n)")
    sizes = np.empty(len(object_list), dtype=np.int64)  # (n,)
    g.recv(sizes, peer, 0)
    payload = np.empty(int(sizes.sum()), dtype=np.uint8)  # (sum sizes,)
    g.recv(payload, peer, 0)
    raw, offsets = payload.tobytes(), np.cumsum([0, *sizes.tolist()])
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        object_list[i] = pickle.loads(raw[a:b])
    ranks = getattr(g, "world_ranks", None)
    return peer if ranks is None else ranks[peer]
