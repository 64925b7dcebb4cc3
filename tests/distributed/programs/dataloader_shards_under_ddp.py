"""Wrapping the model in DistributedDataParallel makes a sampler-less DataLoader shard its
data: disjoint, covering, the same number of samples on every rank (11 samples: uneven over 2
and 3 ranks). Before DDP every rank sees everything."""

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.utils.data import DataLoader, TensorDataset


def main(argv):
    dist.init_process_group()
    world = dist.get_world_size()
    ds = TensorDataset(sf.arange(0, 11))
    before = [int(v) for (b,) in DataLoader(ds, batch_size=2) for v in b.tolist()]
    assert before == list(range(11))  # no DDP yet: every rank sees everything
    nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
    loader = DataLoader(ds, batch_size=2, shuffle=True)
    mine = [int(v) for (b,) in loader for v in b.tolist()]
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)  # torch.distributed's signature
    assert len({len(x) for x in everyone}) == 1, everyone  # padded: same count on every rank
    flat = [v for x in everyone for v in x]
    assert set(flat) == set(range(11)), everyone  # covering
    assert len(flat) - len(set(flat)) == (-11) % world, everyone  # only the padding repeats
