"""Expected to fail: as collective #2, rank 1 calls all_gather and the others all_reduce; the
mismatch report names what each rank called."""

import numpy as np

from shardflow import comm


def main(argv):
    w = comm.init()
    w.all_reduce(np.ones(3))
    if w.rank == 1:
        w.all_gather(np.ones(3))
    else:
        w.all_reduce(np.ones(3))
