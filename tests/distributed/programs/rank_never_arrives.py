"""Expected to fail: rank 1 never calls collective #2 (it sleeps); under a short
``SHARDFLOW_COMM_TIMEOUT`` the waiting ranks' report names who did not arrive and what it
last started."""

import time

import numpy as np

from ._common import start_failing_job


def main(argv):
    w = start_failing_job()
    if w.rank == 1:
        time.sleep(60)  # never calls collective #2
    w.all_reduce(np.ones((2, 5), np.float32))
