"""For tests/distributed/test_run_program.py: how run_program reports a program's end.

``argv[0]`` picks the ending: ``assert`` (rank 1's assertion fails after the world exists),
``before_init`` (rank 1's assertion fails before any process group: no shardflow excepthook
yet), ``early_exit`` (rank 1 leaves with exit code 0 before main() ends), ``pass``."""

import sys

import numpy as np

import shardflow.distributed as dist
from shardflow import _config


def main(argv):
    how = argv[0]
    if how == "before_init" and _config.launch_info().rank == 1:
        expected = [1.0, 2.0]
        assert expected == [1.0, 3.0]
    dist.init_process_group()
    got = np.arange(3) * (dist.get_rank() + 1)
    if how == "assert" and dist.get_rank() == 1:
        assert got.tolist() == [0, 1, 2]
    if how == "early_exit":
        if dist.get_rank() == 1:
            sys.exit(0)
        return
    dist.barrier()
