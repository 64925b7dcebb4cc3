"""Expected to fail: rank 1 dies (``os._exit(3)``) after collective #1 while the others enter
a large all_reduce. The job must end quickly with rank 1's exit code, leaving no process.
Also run as a plain script by ``shardflow run`` (test_failures.py's launcher tests)."""

import os
import sys
import time

import numpy as np

from tests.distributed.programs._common import start_failing_job


def main(argv):
    w = start_failing_job()
    if w.rank == 1:
        os._exit(3)
    w.all_reduce(np.ones(1 << 20, np.float32))
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1:])
