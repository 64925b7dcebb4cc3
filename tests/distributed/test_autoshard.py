"""A single-process script becomes data parallel with no data-splitting code: under real
ranks, wrapping the model in DistributedDataParallel makes a sampler-less DataLoader shard
its data (disjoint, covering, same number of batches on every rank)."""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

SCRIPT = r"""
import numpy as np
import shardflow as sf, shardflow.nn as nn
import shardflow.distributed as dist
from shardflow.utils.data import DataLoader, TensorDataset
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
ds = TensorDataset(sf.arange(0, 11))  # 11 samples: uneven over 2 and 3 ranks
before = [int(v) for (b,) in DataLoader(ds, batch_size=2) for v in b.tolist()]
assert before == list(range(11)), before  # no DDP yet: every rank sees everything
model = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
loader = DataLoader(ds, batch_size=2, shuffle=True)
mine = [int(v) for (b,) in loader for v in b.tolist()]
everyone = [None] * W
dist.all_gather_object(everyone, mine)  # torch.distributed's signature
lengths = {len(x) for x in everyone}
assert len(lengths) == 1, everyone  # padded: same number of samples on every rank
flat = [v for x in everyone for v in x]
assert set(flat) == set(range(11)), everyone  # covering
assert len(flat) - len(set(flat)) == (-11) % W, everyone  # only the padding repeats
print("ok", r, mine)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_dataloader_shards_itself_under_ddp(n):
    res = run_mpi(SCRIPT, n=n, timeout=60)
    assert res.returncode == 0, res.output
    assert res.output.count("ok ") == n, res.output
