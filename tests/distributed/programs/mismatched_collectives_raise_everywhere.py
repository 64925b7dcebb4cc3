"""Ranks that disagree on a collective (one rank, the last, makes a different call) get a
CommError on every rank naming each rank's call, and no array is changed; afterwards the job
is still in step. Covers dtype (small and large, blocking and async), element count, reduce
op, broadcast root and count, different collectives as the same collective number, and the
dtype of all_gather / reduce_scatter / all_to_all. From 3 ranks a majority exists, and the
odd call is marked ``<- differs``.

``argv[0]``: the element count of a "large" message (its signatures are exchanged first)."""

import numpy as np

from shardflow import comm
from shardflow.comm import CommError


def main(argv):
    large = int(argv[0])
    w = comm.init()
    r, n = w.rank, w.size
    odd = n - 1  # the rank that makes a different call

    def expect_mismatch(name, fn, arrays, *needles):
        before = [a.copy() for a in arrays]
        try:
            fn()
        except CommError as e:
            msg = str(e)
            for needle in needles:
                assert needle in msg, (name, needle, msg)
            assert "collective mismatch" in msg, (name, msg)
            assert ("<- differs" in msg) == (n > 2), (name, msg)  # a majority exists from 3 ranks
        else:
            raise AssertionError(f"{name}: no CommError on rank {r}")
        for a, b in zip(arrays, before):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"{name}: array changed on rank {r}"

    def vec(k, dtype=np.float32):
        return (np.arange(k) % 7 + r).astype(dtype)

    # all_reduce, float32 on most ranks, int32 (same bytes) on one: small and large, blocking and async
    for k in (5, large):
        a = vec(k, np.int32 if r == odd else np.float32)
        expect_mismatch(f"all_reduce dtype {k}", lambda: w.all_reduce(a), [a],
                        f"rank {odd}: all_reduce(shape=({k},), dtype=int32, op=sum)",
                        f"rank 0: all_reduce(shape=({k},), dtype=float32, op=sum)")
        a = vec(k, np.int32 if r == odd else np.float32)
        work = w.all_reduce(a, async_op=True)
        expect_mismatch(f"async all_reduce dtype {k}", work.wait, [a], "dtype=int32")
    # element count (large: signatures go first, so every rank sees the same table), reduce op, root
    a = vec(large + (2 if r == odd else 0))
    expect_mismatch("all_reduce count", lambda: w.all_reduce(a), [a], f"shape=({large + 2},)",
                    f"shape=({large},)")
    for k in (6, large):
        a = vec(k)
        expect_mismatch("reduce op", lambda: w.all_reduce(a, "max" if r == odd else "sum"), [a],
                        "op=max", "op=sum")
        b = vec(k)
        expect_mismatch("broadcast root", lambda: w.broadcast(b, 1 if r == odd else 0), [b],
                        "root=1", "root=0")
    # a large broadcast into a larger tensor (signatures go first: every rank raises)
    b = vec(large + (500 if r == odd else 0))
    expect_mismatch("broadcast count", lambda: w.broadcast(b, 0), [b],
                    f"broadcast(shape=({large + 500},)", f"broadcast(shape=({large},)")
    # different collectives as the same collective number
    a = vec(4)
    fn = (lambda: w.all_gather(a)) if r == odd else (lambda: w.all_reduce(a))
    expect_mismatch("op", fn, [a], f"rank {odd}: all_gather(shape=(4,)", "rank 0: all_reduce(shape=(4,)")
    a = vec(large)
    fn = (lambda: w.barrier()) if r == odd else (lambda: w.all_reduce(a, "avg"))
    expect_mismatch("barrier", fn, [a], f"rank {odd}: barrier()")
    for name, call in (("all_gather", lambda x: w.all_gather(x)),
                       ("reduce_scatter", lambda x: w.reduce_scatter(x)),
                       ("all_to_all", lambda x: w.all_to_all(x))):
        for rows in (2, large // 2):
            x = (np.arange(n * rows * 2) + r).reshape(n * rows, 2).astype(
                np.float64 if r == odd else np.int64)
            expect_mismatch(f"{name} dtype", lambda: call(x), [x], "dtype=float64", "dtype=int64")
    # every rank raised at the same point, so the job is still in step
    a = vec(3)
    w.all_reduce(a)
    assert np.allclose(a, sum((np.arange(3) % 7 + k) for k in range(n)))
