"""Expected to fail: after collective #1, rank 1 calls ``sys.exit(CODE)`` while rank 0 goes on
to wait for it in collective #2 (``argv`` ``CODE collective``) or in a recv from it
(``CODE recv``). The report must name rank 1 and its exit code at once, never the waiting
rank's timeout. Also run as a plain script by ``shardflow run``."""

import sys

import numpy as np

from shardflow import comm


def main(argv):
    code, where = int(argv[0]), argv[1]
    w = comm.init()
    w.all_reduce(np.ones(3))  # collective #1, everyone
    if w.rank == 1:
        sys.exit(code)  # leaves while rank 0 goes on to collective #2
    if where == "collective":
        w.all_reduce(np.ones(3))
    else:
        w.recv(np.zeros(3), 1)


if __name__ == "__main__":
    main(sys.argv[1:])
