"""An all_reduce of (3, 4) against (4, 3) (the same element count): what MPI needs agrees, so
it passes (prints ``PASSED {rank} {sum}``) unless ``SHARDFLOW_DEBUG=collectives`` compares
shapes too; then it raises on both ranks naming both shapes (prints ``RAISED {rank}``)."""

import numpy as np

from shardflow import comm
from shardflow.comm import CommError


def main(argv):
    w = comm.init()
    a = np.ones((3, 4) if w.rank == 0 else (4, 3), np.float32)  # same number of elements
    try:
        w.all_reduce(a)
        print("PASSED", w.rank, float(a.sum()), flush=True)
    except CommError as e:
        assert "shape=(3, 4)" in str(e) and "shape=(4, 3)" in str(e), str(e)
        print("RAISED", w.rank, flush=True)
