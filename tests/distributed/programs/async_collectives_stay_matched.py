"""Large async collectives, polled by the ranks in different orders, stay matched.

Each round starts six large async all-reduces (past the small path: their data call waits for
the signature exchange), rank 0 polls them from the back, then a blocking large all-reduce
runs while they are pending, and the ranks wait on them in opposite orders; then an async
broadcast and all-gather around a barrier. Every result must be the NumPy one."""

import numpy as np

from shardflow import comm


def main(argv):
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
        g.wait()
        work.wait()
        assert np.array_equal(b, np.arange(20000, dtype=np.float64))
