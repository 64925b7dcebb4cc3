"""Expected to fail: rank 1 raises ``ValueError("deliberate failure on rank 1")`` after
collective #1; shardflow's excepthook must print it with the rank and abort the whole job.
Also run as a plain script by ``shardflow run`` (test_failures.py's launcher tests)."""

import sys
import time

import numpy as np

from tests.distributed.programs._common import start_failing_job


def main(argv):
    w = start_failing_job()
    if w.rank == 1:
        raise ValueError("deliberate failure on rank 1")
    w.all_reduce(np.ones((2, 2), np.float32))
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1:])
