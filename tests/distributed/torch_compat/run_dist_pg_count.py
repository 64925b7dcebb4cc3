"""Rank program (2 ranks): ``get_pg_count`` after init, after new_group (members and
non-members) and after destroying the world, against torch's gloo groups."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import shardflow.distributed as dist  # noqa: E402

assert dist.get_pg_count() == 0
from tests.distributed.torch_compat.pair import init_pair  # noqa: E402

r, n = init_pair(sf_backend="gloo")
import torch.distributed as tdist  # noqa: E402

assert dist.get_pg_count() == tdist.get_pg_count() == 1, (dist.get_pg_count(), tdist.get_pg_count())
dist.new_group([0, 1]), tdist.new_group([0, 1])
dist.new_group([0]), tdist.new_group([0])  # rank 1 is no member: counted all the same
assert dist.get_pg_count() == tdist.get_pg_count() == 3, (dist.get_pg_count(), tdist.get_pg_count())
dist.barrier()
tdist.destroy_process_group()
dist.destroy_process_group()
assert dist.get_pg_count() == tdist.get_pg_count() == 0
print("PG COUNT OK", flush=True)
