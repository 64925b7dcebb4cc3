"""A small broadcast into a tensor larger on rank 1 (6 elements) than on rank 0 (4): the data
rides in the signature exchange, whose blocks now differ in size. Each rank prints
``ERR{rank}: {message}`` (the test wants MPI_ERR_TRUNCATE on the smaller side and both
shapes everywhere) or ``NO ERROR {rank}``."""

import numpy as np

from shardflow import comm
from shardflow.comm import CommError


def main(argv):
    w = comm.init()
    b = np.zeros(6 if w.rank == 1 else 4, np.float32)
    try:
        w.broadcast(b, 0)  # small: data rides in the exchange, whose blocks now differ in size
    except CommError as e:
        print(f"ERR{w.rank}: " + str(e).replace("\n", " | "), flush=True)
        return
    print("NO ERROR", w.rank, flush=True)
