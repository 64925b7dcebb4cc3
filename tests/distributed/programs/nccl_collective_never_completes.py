"""Expected to fail: rank 1's third NCCL call never completes (a peer stalled inside the
collective, the fake NCCL's ``hang_after``); the collective timeout must end the job, naming
the rank and the operation, and abort the NCCL communicator. Prints ``UNREACHABLE on rank R``
if the loop ever ends."""

import numpy as np

from shardflow import comm
from tests.doubles.fake_nccl import to_device

from ._fake_nccl import fake_nccl_world


def main(argv):
    world = comm.init()  # failure handling (excepthook, abort) as a real job has it
    w, _ = fake_nccl_world(hang_after=2 if world.rank == 1 else None)
    for _ in range(3):
        a = to_device(np.ones(8, np.float32))
        w.all_reduce(a, "sum")
    print("UNREACHABLE on rank", w.rank, flush=True)
