"""Ranks that merely finish at different times (rank 0 sleeps 1 s after the last collective)
end normally: every rank prints ``done {rank}`` and exits 0, with no "exiting" report."""

import time

import numpy as np

from shardflow import comm


def main(argv):
    w = comm.init()
    w.all_reduce(np.ones(3))
    if w.rank == 0:
        time.sleep(1.0)  # the others reach the end first: a normal ending
    print("done", w.rank, flush=True)
