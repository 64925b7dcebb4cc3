"""Rank program (2 ranks): ``new_subgroups`` and ``new_subgroups_by_enumeration`` against
torch's gloo in the same processes: the groups' ranks, the current subgroup, an all-reduce in
it, ``get_pg_count``, and torch's error messages for bad arguments (raised before any group is
made here)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import init_pair  # noqa: E402

r, n = init_pair(sf_backend="gloo")

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402

import shardflow as sf  # noqa: E402
import shardflow.distributed as dist  # noqa: E402
from shardflow import accelerator  # noqa: E402


def same_groups(ours, theirs, what):
    (s_cur, s_all), (t_cur, t_all) = ours, theirs
    assert len(s_all) == len(t_all), what
    for s, t in zip(s_all, t_all):
        s_member = s is not dist.GroupMember.NON_GROUP_MEMBER
        t_member = t is not tdist.GroupMember.NON_GROUP_MEMBER
        assert s_member == t_member, what
        if s_member:
            assert dist.get_process_group_ranks(s) == tdist.get_process_group_ranks(t), what
    assert dist.get_process_group_ranks(s_cur) == tdist.get_process_group_ranks(t_cur), what
    a, b = sf.tensor([float(r + 1)]), torch.tensor([float(r + 1)])
    dist.all_reduce(a, group=s_cur)
    tdist.all_reduce(b, group=t_cur)
    assert np.array_equal(a.numpy(), b.numpy()), (what, a, b)


for size in (1, 2):
    same_groups(dist.new_subgroups(group_size=size), tdist.new_subgroups(group_size=size),
                f"new_subgroups({size})")
for lists in ([[0], [1]], [[1, 0]], [[1]]):
    ours = dist.new_subgroups_by_enumeration(lists)
    theirs = tdist.new_subgroups_by_enumeration(lists)
    if r in lists[0] or len(lists) > 1:
        same_groups(ours, theirs, f"by_enumeration({lists})")
    else:  # this rank is in no subgroup: both return None for the current one
        assert ours[0] is None and theirs[0] is None
assert dist.get_pg_count() == tdist.get_pg_count(), (dist.get_pg_count(), tdist.get_pg_count())


def same_error(ours, theirs):
    try:
        ours()
        raise AssertionError("shardflow accepted a bad argument")
    except ValueError as e:
        got = str(e)
    try:
        theirs()
        raise AssertionError("torch accepted a bad argument")
    except ValueError as e:
        want = str(e)
    assert got == want, (got, want)


before = dist.get_pg_count()
# group_size=None means "the GPUs of this host": an error without CUDA (torch here is CPU-only)
for size in (0, 3) if accelerator.device_count() else (0, 3, None):
    same_error(lambda: dist.new_subgroups(group_size=size),
               lambda: tdist.new_subgroups(group_size=size))
same_error(lambda: dist.new_subgroups_by_enumeration([]),
           lambda: tdist.new_subgroups_by_enumeration([]))
same_error(lambda: dist.new_subgroups_by_enumeration([[0, 1], [1]]),
           lambda: tdist.new_subgroups_by_enumeration([[0, 1], [1]]))
assert dist.get_pg_count() == before  # refused before any group was made
dist.barrier()
print("SUBGROUPS OK", flush=True)
