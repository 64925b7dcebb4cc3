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

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

SCRIPT = r"""
import numpy as np
from shardflow import comm
w = comm.init()
r, n = w.rank, w.size
rng = np.random.default_rng(7)  # the same sizes on every rank
for rnd in range(6):
    sizes = [int(s) for s in rng.integers(1000, 60000, size=6)]  # past the small path
    arrays = [np.full(k, float(r + 1 + i), np.float32) for i, k in enumerate(sizes)]
    works = [w.all_reduce(a, async_op=True) for a in arrays]
    # ranks drive them differently: rank 0 polls from the back, the others not at all
    if r == 0:
        for wk in reversed(works):
            wk.is_completed()
    mid = np.full(30000, float(r), np.float64)
    w.all_reduce(mid)  # a blocking large collective while the async ones are pending
    assert np.allclose(mid, sum(range(n)))
    order = reversed(range(len(works))) if (r + rnd) % 2 else range(len(works))
    for i in order:
        works[i].wait()
        want = sum(k + 1 + i for k in range(n))
        assert np.allclose(arrays[i], want), (rnd, i, arrays[i][:3], want)
    b = np.arange(20000, dtype=np.float64) * (r == 1)
    work = w.broadcast(b, 1, async_op=True)
    g = w.all_gather(np.full(5000, r, np.int64), async_op=True)
    w.barrier()
    g.wait(); work.wait()
    assert np.array_equal(b, np.arange(20000, dtype=np.float64))
print("ALL OK", r, flush=True)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_async_large_collectives_polled_in_any_order_stay_matched(n):
    res = run_mpi(SCRIPT, n=n, timeout=90, env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()
    assert res.stdout.count("ALL OK") == n, res.output
