"""Rank program (3 ranks): torch 2.6+'s group-rank peers (``group_src`` / ``group_dst``) of
``broadcast``, ``broadcast_object_list``, ``send``/``recv``, ``isend``/``irecv``, and
``new_group(group_desc=..., device_id=..., sort_ranks=...)`` / ``barrier(timeout=...)``,
against torch's gloo in the same processes: the same values arrive from the same ranks."""

import sys
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import init_pair  # noqa: E402

r, n = init_pair(sf_backend="gloo")

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

import shardflow as sf  # noqa: E402
import shardflow.distributed as dist  # noqa: E402


def run(lib, d):
    """Everything this rank sees, for ``lib`` / its ``distributed`` module ``d``."""
    seen = []
    g = d.new_group([2, 1], group_desc="pair", device_id=None)  # sorted: group rank 0 = global 1
    d.barrier(timeout=timedelta(seconds=30))
    if r in (1, 2):
        t = lib.tensor([float(10 * r)])
        d.broadcast(t, group=g, group_src=1)  # from global rank 2
        seen.append(("broadcast", t.tolist()))
        objs = [{"from": r}] if r == 1 else [None]
        d.broadcast_object_list(objs, group=g, group_src=0)  # from global rank 1
        seen.append(("objects", objs))
        if r == 1:
            d.send(lib.tensor([7.0]), group=g, group_dst=1)
            w = d.isend(lib.tensor([8.0]), group=g, group_dst=1)
            w.wait()
        else:
            got = lib.zeros(1)
            src = d.recv(got, group=g, group_src=0)
            seen.append(("recv", got.tolist(), src))
            got2 = lib.zeros(1)
            d.irecv(got2, group=g, group_src=0).wait()
            seen.append(("irecv", got2.tolist()))
        # batch_isend_irecv with P2POp(group_peer=): both directions at once
        peer = 1 - (0 if r == 1 else 1)
        out, back = lib.tensor([float(r)]), lib.zeros(1)
        for w in d.batch_isend_irecv([d.P2POp(d.isend, out, group=g, group_peer=peer),
                                      d.P2POp(d.irecv, back, group=g, group_peer=peer)]):
            w.wait()
        seen.append(("batch", back.tolist()))
        try:
            d.send(lib.zeros(1), dst=1, group=g, group_dst=0)
        except ValueError as e:  # torch: ValueError too (its own words)
            seen.append(("both", type(e).__name__))
    d.barrier()
    return seen


ours, theirs = run(sf, dist), run(torch, tdist)
assert ours == theirs, (r, ours, theirs)
assert r == 0 or ours[0] == ("broadcast", [20.0]), ours
try:
    dist.new_group([1, 0], sort_ranks=False)
except NotImplementedError as e:
    assert "sort_ranks=False" in str(e)
else:
    raise AssertionError("new_group(sort_ranks=False) out of order was accepted")
print(f"rank {r} GROUP PEERS OK {np.asarray(len(ours))}", flush=True)
