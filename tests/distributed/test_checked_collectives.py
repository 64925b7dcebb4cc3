"""Collectives cannot be silently wrong: mismatched calls raise on every rank, arrays intact.

Without any debug flag, ranks that disagree on dtype, element count, root, reduce op or
the collective itself get a CommError naming each rank's call (small messages, whose data
rides in the signature exchange, and large ones, whose signatures go first), and no array
is changed, so the job can even catch it and go on. When the small exchange's blocks differ
in size (a small broadcast into a larger tensor), the smaller side gets MPI_ERR_TRUNCATE,
reported with both shapes, and the larger side the mismatch. Point-to-point: a recv into a buffer smaller, larger or of another dtype than what
was sent raises with both shapes.
"""

import pytest

from shardflow.comm import mpi as _mpi_backend
from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

LARGE = 20_000  # float32 elements: signatures first, then MPI's own collective on the data
assert 4 * LARGE > _mpi_backend.EAGER_SAFE_BYTES

MISMATCHES = r"""
import sys
import numpy as np
from shardflow import comm
from shardflow.comm import CommError
LARGE = int(sys.argv[1])
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
for k in (5, LARGE):
    a = vec(k, np.int32 if r == odd else np.float32)
    expect_mismatch(f"all_reduce dtype {k}", lambda: w.all_reduce(a), [a],
                    f"rank {odd}: all_reduce(shape=({k},), dtype=int32, op=sum)",
                    f"rank 0: all_reduce(shape=({k},), dtype=float32, op=sum)")
    a = vec(k, np.int32 if r == odd else np.float32)
    work = w.all_reduce(a, async_op=True)
    expect_mismatch(f"async all_reduce dtype {k}", work.wait, [a], "dtype=int32")
# element count (large: signatures go first, so every rank sees the same table), reduce op, root
a = vec(LARGE + (2 if r == odd else 0))
expect_mismatch("all_reduce count", lambda: w.all_reduce(a), [a], f"shape=({LARGE + 2},)",
                f"shape=({LARGE},)")
for k in (6, LARGE):
    a = vec(k)
    expect_mismatch("reduce op", lambda: w.all_reduce(a, "max" if r == odd else "sum"), [a],
                    "op=max", "op=sum")
    b = vec(k)
    expect_mismatch("broadcast root", lambda: w.broadcast(b, 1 if r == odd else 0), [b],
                    "root=1", "root=0")
# a large broadcast into a larger tensor (signatures go first: every rank raises)
b = vec(LARGE + (500 if r == odd else 0))
expect_mismatch("broadcast count", lambda: w.broadcast(b, 0), [b],
                f"broadcast(shape=({LARGE + 500},)", f"broadcast(shape=({LARGE},)")
# different collectives as the same collective number
a = vec(4)
fn = (lambda: w.all_gather(a)) if r == odd else (lambda: w.all_reduce(a))
expect_mismatch("op", fn, [a], f"rank {odd}: all_gather(shape=(4,)", "rank 0: all_reduce(shape=(4,)")
a = vec(LARGE)
fn = (lambda: w.barrier()) if r == odd else (lambda: w.all_reduce(a, "avg"))
expect_mismatch("barrier", fn, [a], f"rank {odd}: barrier()")
for name, call in (("all_gather", lambda x: w.all_gather(x)),
                   ("reduce_scatter", lambda x: w.reduce_scatter(x)),
                   ("all_to_all", lambda x: w.all_to_all(x))):
    for rows in (2, LARGE // 2):
        x = (np.arange(n * rows * 2) + r).reshape(n * rows, 2).astype(
            np.float64 if r == odd else np.int64)
        expect_mismatch(f"{name} dtype", lambda: call(x), [x], "dtype=float64", "dtype=int64")
# every rank raised at the same point, so the job is still in step
a = vec(3)
w.all_reduce(a)
assert np.allclose(a, sum((np.arange(3) % 7 + k) for k in range(n)))
print("ALL OK", r, flush=True)
"""

SHAPES = r"""
import os
import numpy as np
from shardflow import comm
from shardflow.comm import CommError
w = comm.init()
a = np.ones((3, 4) if w.rank == 0 else (4, 3), np.float32)  # same number of elements
try:
    w.all_reduce(a)
    print("PASSED", w.rank, float(a.sum()), flush=True)
except CommError as e:
    assert "shape=(3, 4)" in str(e) and "shape=(4, 3)" in str(e), str(e)
    print("RAISED", w.rank, flush=True)
"""

TRUNCATE = r"""
import sys
import numpy as np
from shardflow import comm
from shardflow.comm import CommError
w = comm.init()
b = np.zeros(6 if w.rank == 1 else 4, np.float32)
try:
    w.broadcast(b, 0)  # small: data rides in the exchange, whose blocks now differ in size
except CommError as e:
    print(f"ERR{w.rank}: " + str(e).replace("\n", " | "), flush=True)
    sys.exit(0)
print("NO ERROR", w.rank, flush=True)
"""

P2P = r"""
import numpy as np
from shardflow import comm
from shardflow.comm import CommError
w = comm.init()
r = w.rank
cases = [((6,), np.float32, (4,), np.float32),   # receiver smaller: MPI_ERR_TRUNCATE
         ((4,), np.float32, (6,), np.float32),   # receiver larger: short message
         ((4,), np.int32, (4,), np.float32),     # same bytes, other dtype
         ((5000,), np.float64, (4000,), np.float64)]
for i, (sshape, sdt, rshape, rdt) in enumerate(cases):
    if r == 0:
        w.send(np.ones(sshape, sdt), 1, tag=i)
    else:
        buf = np.zeros(rshape, rdt)
        try:
            w.recv(buf, 0, tag=i)
        except CommError as e:
            msg = str(e)
            sent = f"shape=({sshape[0]},), dtype={np.dtype(sdt).name}"
            want = f"shape=({rshape[0]},), dtype={np.dtype(rdt).name}"
            assert sent in msg and want in msg and "rank 0 sent" in msg, msg
        else:
            raise AssertionError(f"case {i}: no CommError")
w.barrier()
x = np.arange(3.0) + r
if r == 0:
    w.send(x, 1, tag=9)
else:
    w.recv(x, 0, tag=9)
    assert x.tolist() == [0.0, 1.0, 2.0]
# several receives from one (source, tag) in flight, waited on in reverse: MPI's order holds
sizes = [3, 5000, 7]
if r == 0:
    for i, k in enumerate(sizes):
        w.send(np.full(k, float(i)), 1, tag=11)
else:
    bufs = [np.zeros(k) for k in sizes]
    works = [w.recv(b, 0, tag=11, async_op=True) for b in bufs]
    for work in reversed(works):
        work.wait()
    assert [float(b[0]) for b in bufs] == [0.0, 1.0, 2.0], [b[:2] for b in bufs]
print("ALL OK", r, flush=True)
"""


@pytest.mark.parametrize("n", [2, 3])
def test_mismatched_calls_raise_on_every_rank_and_change_nothing(n):
    res = run_mpi(MISMATCHES, n=n, timeout=90, args=[LARGE]).check()
    assert res.stdout.count("ALL OK") == n, res.output


def test_shapes_with_equal_counts_are_compared_in_debug_mode_only():
    res = run_mpi(SHAPES, n=2, timeout=60).check()
    assert res.stdout.count("PASSED") == 2, res.output  # what MPI needs agrees
    res = run_mpi(SHAPES, n=2, timeout=60, env={"SHARDFLOW_DEBUG": "collectives"}).check()
    assert res.stdout.count("RAISED") == 2, res.output


def test_broadcast_into_larger_tensor_reports_both_shapes():
    res = run_mpi(TRUNCATE, n=2, timeout=60)
    assert not res.timed_out and "NO ERROR" not in res.stdout, res.output
    errors = [line for line in res.stdout.splitlines() if line.startswith("ERR")]
    assert len(errors) == 2, res.output
    truncated = [e for e in errors if "MPI_ERR_TRUNCATE" in e]
    assert truncated, res.output  # the smaller side's receive was truncated
    for e in errors:
        assert "broadcast(shape=(4,), dtype=float32, root=0)" in e, e
        assert "broadcast(shape=(6,), dtype=float32, root=0)" in e, e


def test_recv_of_other_size_or_dtype_reports_both_shapes():
    res = run_mpi(P2P, n=2, timeout=60).check()
    assert res.stdout.count("ALL OK") == 2, res.output
