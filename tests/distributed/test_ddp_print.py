"""``print(ddp_model)`` and its state dict's keys, as torch 2.13's (a world of one on each
side: torch's gloo over a HashStore, shardflow's world of one). shardflow's repr added a line
``world_size=1, buckets=1, find_unused_parameters=False`` that torch does not print."""

import pytest

import shardflow as sf
import shardflow.distributed as dist

torch = pytest.importorskip("torch")
import torch.distributed as tdist  # noqa: E402


def test_ddp_prints_and_names_its_state_like_torch():
    tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
    dist.init_process_group("gloo")
    try:
        th = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.BatchNorm1d(3)))
        ours = sf.nn.parallel.DistributedDataParallel(
            sf.nn.Sequential(sf.nn.Linear(2, 3), sf.nn.ReLU(), sf.nn.BatchNorm1d(3)))
        assert repr(ours) == repr(th)
        assert list(ours.state_dict()) == list(th.state_dict())
    finally:
        dist.destroy_process_group()
        tdist.destroy_process_group()
