"""Rank program (2 ranks): ``send_object_list``/``recv_object_list`` (both directions, a
sub-group, the returned sender rank, a length mismatch) and ``all_reduce_coalesced`` /
``all_gather_coalesced``, against torch's gloo in the same processes on the same data."""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import close, init_pair  # noqa: E402

r, n = init_pair(sf_backend="gloo")

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

import shardflow as sf  # noqa: E402
import shardflow.distributed as dist  # noqa: E402
from shardflow.comm import CommError  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # torch's deprecation notes
peer = 1 - r

# ---- object p2p, both directions, torch's results side by side ---------------------------------
for sender in (0, 1):
    objs = ["foo", 12 + sender, {1: (2, 3.5)}, None, np.arange(3) * (sender + 1)]
    if r == sender:
        dist.send_object_list(objs, dst=peer)
        tdist.send_object_list(objs, dst=peer)
    else:
        mine, theirs = [None] * 5, [None] * 5
        got_s = dist.recv_object_list(mine, src=sender)
        got_t = tdist.recv_object_list(theirs, src=sender)
        assert got_s == got_t == sender, (got_s, got_t)
        assert mine[:4] == theirs[:4] == objs[:4], (mine, theirs)
        assert np.array_equal(mine[4], theirs[4]) and np.array_equal(mine[4], objs[4])

# use_batch=True (torch: batched p2p on the group's communicator): the same objects arrive
if r == 0:
    dist.send_object_list(["batched", 7], dst=1, use_batch=True)
    tdist.send_object_list(["batched", 7], dst=1, use_batch=True)
else:
    mine, theirs = [None, None], [None, None]
    assert dist.recv_object_list(mine, src=0, use_batch=True) == 0
    assert tdist.recv_object_list(theirs, src=0, use_batch=True) == 0
    assert mine == theirs == ["batched", 7], (mine, theirs)
try:
    dist.send_object_list([1], dst=peer, use_batch="yes")
    raise AssertionError("use_batch='yes' was accepted")
except TypeError as e:
    assert "use_batch must be True or False" in str(e), e

# a sub-group: dst/src are global ranks; a shardflow tensor travels as an object
sg = dist.new_group([0, 1])
if r == 0:
    dist.send_object_list([sf.tensor([1.0, 2.0]), "x"], dst=1, group=sg)
else:
    slots = [None, None]
    assert dist.recv_object_list(slots, src=0, group=sg) == 0
    assert slots[1] == "x" and np.array_equal(slots[0].numpy(), [1.0, 2.0])

# bad input: the caller's own rank, src=None, a list of the wrong length (bounded, named)
for call in (lambda: dist.send_object_list([1], dst=r), lambda: dist.recv_object_list([1], src=r)):
    try:
        call()
        raise AssertionError("sending to oneself was accepted")
    except ValueError as e:
        assert "should not be the same as the rank of the current process" in str(e), e
# src=None: from any rank (torch's default), returning the sender's global rank
if r == 1:
    dist.send_object_list(["any"], dst=0)
elif r == 0:
    slots = [None]
    assert dist.recv_object_list(slots) == 1 and slots == ["any"], slots
if r == 0:
    dist.send_object_list([1, 2, 3], dst=1)
else:
    try:
        dist.recv_object_list([None, None], src=0)
        raise AssertionError("a 2-slot list received 3 objects")
    except CommError as e:
        assert "rank 0" in str(e), e
dist.barrier()


# ---- coalesced collectives ---------------------------------------------------------------------
def data(rank, shape, seed):
    return np.random.default_rng(100 * seed + rank).standard_normal(shape).astype(np.float32)


shapes = [(3, 2), (4,), (1, 2, 2)]
for op_s, op_t in ((dist.ReduceOp.SUM, tdist.ReduceOp.SUM), (dist.ReduceOp.MAX, tdist.ReduceOp.MAX)):
    s = [sf.tensor(data(r, sh, i)) for i, sh in enumerate(shapes)]
    t = [torch.tensor(data(r, sh, i)) for i, sh in enumerate(shapes)]
    dist.all_reduce_coalesced(s, op=op_s)
    tdist.all_reduce_coalesced(t, op=op_t)
    for a, b in zip(s, t):
        close(a.numpy(), b.numpy(), f"all_reduce_coalesced {op_s}")
s = [sf.tensor(data(r, sh, i)) for i, sh in enumerate(shapes)]
dist.all_reduce_coalesced(s, async_op=True).wait()
for i, (a, sh) in enumerate(zip(s, shapes)):
    close(a.numpy(), data(0, sh, i) + data(1, sh, i), "all_reduce_coalesced async")

s_out = [[sf.zeros(*sh) for sh in shapes] for _ in range(n)]
t_out = [[torch.zeros(*sh) for sh in shapes] for _ in range(n)]
dist.all_gather_coalesced(s_out, [sf.tensor(data(r, sh, i)) for i, sh in enumerate(shapes)])
tdist.all_gather_coalesced(t_out, [torch.tensor(data(r, sh, i)) for i, sh in enumerate(shapes)])
for so, to in zip(s_out, t_out):
    for a, b in zip(so, to):
        close(a.numpy(), b.numpy(), "all_gather_coalesced", 0)
try:
    dist.all_reduce_coalesced([sf.zeros(2), sf.zeros(2, dtype=sf.float64)])
    raise AssertionError("mixed dtypes were accepted")
except ValueError as e:
    assert "one dtype" in str(e), e

dist.barrier()
print("OBJECT P2P OK", flush=True)
