"""``dist.group.WORLD`` / ``dist.GroupMember.WORLD`` are the default process group once
``init_process_group`` ran (None before), as in torch 2.13."""

import pytest
import torch.distributed as tdist

import shardflow.distributed as dist


@pytest.fixture
def world():
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_world_is_none_before_init():
    assert not dist.is_initialized()
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is None
    assert tdist.group.WORLD is None  # torch's, before its own init


def test_world_is_the_default_group_after_init(world):
    w = dist.group.WORLD
    assert w is not None and w is dist.GroupMember.WORLD
    assert w.size == 1 and w.rank == 0
    assert dist.get_world_size(dist.group.WORLD) == 1
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0]
    assert dist.get_world_size(dist.new_group([0])) == 1



def test_work_get_future_gives_the_result_tensors(world):
    import shardflow as sf

    t = sf.ones(3)
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert fut.wait()[0] is t
    assert dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2).wait().tolist() == [2.0] * 3
