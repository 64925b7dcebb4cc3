"""Expected to fail: an all_reduce of (3, 4) on rank 0 and (4, 4) on rank 1, under
``SHARDFLOW_DEBUG=collectives``: a collective mismatch naming both calls."""

import time

import numpy as np

from ._common import start_failing_job


def main(argv):
    w = start_failing_job()
    shape = (3, 4) if w.rank == 0 else (4, 4)
    w.all_reduce(np.ones(shape, np.float32))
    time.sleep(60)
