"""Pipeline parallelism on 4 ranks trains GPT-mini like one process: 4 stages (1F1B with 4
micro-batches, GPipe with 2) and 2 stages x 2 data-parallel replicas (GPipe, 1F1B)."""

import shardflow.distributed as dist
from shardflow import comm

from ._pipeline_gpt import run_schedule


def main(argv):
    dist.init_process_group()
    world = comm.get_world()
    run_schedule(world, "1f1b", 4, 1, 4)
    run_schedule(world, "gpipe", 4, 1, 2)
    run_schedule(world, "gpipe", 2, 2, 2)
    run_schedule(world, "1f1b", 2, 2, 4)
