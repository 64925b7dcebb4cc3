"""A single-process script becomes data parallel with no data-splitting code: under real
ranks, wrapping the model in DistributedDataParallel makes a sampler-less DataLoader shard
its data (disjoint, covering, same number of batches on every rank)."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 3])
def test_dataloader_shards_itself_under_ddp(n):
    run_program("tests.distributed.programs.dataloader_shards_under_ddp", n=n, timeout=60).check()
