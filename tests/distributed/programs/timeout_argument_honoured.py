"""Expected to fail: ``init_process_group(timeout=timedelta(seconds=2))`` (torch's argument,
which shardflow accepted and ignored before session 30: the waiting rank then waited for the
600 s default); rank 1 sleeps instead of calling the all_reduce, so rank 0's wait ends the
job after 2 s with the report naming rank 1."""

import time
from datetime import timedelta

import shardflow as torch
import shardflow.distributed as dist


def main(argv):
    dist.init_process_group("gloo", timeout=timedelta(seconds=2))
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.all_reduce(torch.ones(4))
