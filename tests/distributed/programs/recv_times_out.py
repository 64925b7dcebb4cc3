"""Expected to fail: rank 0 receives with tag 0 while rank 1 sends with tag 5 (never matched);
under a short ``SHARDFLOW_COMM_TIMEOUT`` the report names the peer and what it did instead."""

import time

import numpy as np

from shardflow import comm


def main(argv):
    w = comm.init()
    w.barrier()
    if w.rank == 0:
        w.recv(np.zeros(3, np.float32), 1, tag=0)
    else:
        w.send(np.ones(3, np.float32), 0, tag=5)  # the wrong tag: rank 0 never gets it
        time.sleep(60)
