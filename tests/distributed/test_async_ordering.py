"""Async collectives whose data step waits for their signature exchange stay matched.

MPI matches collectives on a communicator by issue order. A large async collective issues
its data call only once its signatures matched, which it notices when polled; ranks poll
in different orders (waits in reverse, progress() at different moments, a blocking
collective in between, sizes that finish at different times), so without ordering the
data calls would be issued in different orders on different ranks: truncated messages,
a crash ("MPI Error in NBC subrequest ... 15") or wrong sums. Data parallel's buckets are
exactly this pattern.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 3])
def test_async_large_collectives_polled_in_any_order_stay_matched(n):
    run_program("tests.distributed.programs.async_collectives_stay_matched", n=n, timeout=90,
                env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()
