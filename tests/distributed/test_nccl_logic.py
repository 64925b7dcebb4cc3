"""The NCCL communicator's own logic on real MPI ranks, without a GPU: its device side is
``tests.doubles.fake_nccl.FakeCudaAPI`` (NCCL's calls on host memory through MPI), so what is
checked is what the communicator hands to NCCL (pointers, counts, dtypes, roots, grouped
send/recv), its signature checks, its timeout report and its routing of host arrays.
The same communicator on a real GPU is tests/gpu/test_nccl.py.

Each rank rebuilds every rank's input from its seed, so the expected values are an
independent NumPy computation.
"""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

COMMON = r"""
import sys
import numpy as np
from shardflow import comm
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.comm.mpi import MPICommunicator
from tests.doubles.fake_nccl import FakeCudaAPI, DeviceArray, to_device

def data(rank, shape, dtype=np.float32, seed=0):
    g = np.random.default_rng(1000 * seed + rank)
    if np.dtype(dtype).kind in "iu":
        return g.integers(-5, 6, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return g.random(shape) < 0.5
    return g.standard_normal(shape).astype(dtype)

def close(a, b, tol=1e-5):
    a = np.asarray(a, dtype=np.float64); b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.allclose(a, b, rtol=tol, atol=tol), np.abs(a - b).max()
"""

COLLECTIVES = COMMON + r"""
has_avg = sys.argv[1] == "1"
api = FakeCudaAPI(has_avg=has_avg)
w = NCCLCommunicator(MPICommunicator(), api=api)
r, n = w.rank, w.size
refs = {"sum": lambda xs: np.sum(xs, 0), "avg": lambda xs: np.mean(xs, 0),
        "max": lambda xs: np.max(xs, 0), "min": lambda xs: np.min(xs, 0),
        "prod": lambda xs: np.prod(xs, 0)}
calls = api.calls
for seed, (op, ref) in enumerate(refs.items()):
    for dt in (np.float32, np.float64, np.int64, np.float16):
        if op == "avg" and dt is np.int64:
            continue
        xs = np.stack([data(k, (4, 6), dt, seed) for k in range(n)])
        a = to_device(data(r, (4, 6), dt, seed))
        out = w.all_reduce(a, op)
        assert out is a and isinstance(out, DeviceArray)
        close(a, ref(xs.astype(np.float64)).astype(dt), 2e-3 if dt is np.float16 else 1e-5)
        # a non-contiguous view is packed, reduced and written back into its base
        base = np.stack([data(k, (6, 8), dt, seed + 50) for k in range(n)])
        mine = to_device(data(r, (6, 8), dt, seed + 50))
        w.all_reduce(mine[::2, 1::3].T, op)
        close(mine[::2, 1::3].T, ref(base[:, ::2, 1::3].transpose(0, 2, 1).astype(np.float64)).astype(dt),
              2e-3 if dt is np.float16 else 1e-5)
        close(mine[1::2], base[r, 1::2])
assert api.calls > calls  # the data went through the (fake) NCCL calls
# bool: a sum is a logical or (PyTorch's NCCL mapping)
bs = [data(k, (9,), np.bool_, 3) for k in range(n)]
b = to_device(bs[r]); w.all_reduce(b, "sum")
assert b.dtype == np.bool_ and (b == np.any(bs, 0)).all()
# broadcast from every root
for src in range(n):
    a = to_device(data(r, (3, 5), np.float32, 11))
    w.broadcast(a, src)
    close(a, data(src, (3, 5), np.float32, 11))
# all_gather, reduce_scatter (sum and avg), all_to_all
g = w.all_gather(to_device(data(r, (2, 3), np.float32, 12)))
assert isinstance(g, DeviceArray) and g.shape == (n, 2, 3)
close(g, np.stack([data(k, (2, 3), np.float32, 12) for k in range(n)]))
for op in ("sum", "avg"):
    xs = np.stack([data(k, (2 * n, 3), np.float32, 13) for k in range(n)])
    rs = w.reduce_scatter(to_device(data(r, (2 * n, 3), np.float32, 13)), op)
    close(rs, refs[op](xs)[2 * r:2 * r + 2])
a2a = w.all_to_all(to_device(data(r, (n * 2, 4), np.int32, 14)))
want = np.concatenate([data(k, (n * 2, 4), np.int32, 14)[2 * r:2 * r + 2] for k in range(n)])
close(a2a, want)
# async handles complete in order
works = [w.all_reduce(to_device(np.full(5, r + i, np.float32)), "sum", async_op=True) for i in range(3)]
for i, wk in enumerate(works):
    close(wk.wait(), np.full(5, sum(k + i for k in range(n)), np.float32))
# send / recv around a ring
x = to_device(data(r, (4,), np.float64, 15)); y = to_device(np.zeros(4))
if r % 2 == 0:
    w.send(x, (r + 1) % n); w.recv(y, (r - 1) % n)
else:
    w.recv(y, (r - 1) % n); w.send(x, (r + 1) % n)
close(y, data((r - 1) % n, (4,), np.float64, 15))
# host (NumPy) arrays go through the control communicator, untouched by NCCL
calls = api.calls
h = data(r, (3,), np.float32, 16); w.all_reduce(h, "sum")
close(h, np.sum([data(k, (3,), np.float32, 16) for k in range(n)], 0))
assert api.calls == calls
# sub-groups get their own NCCL communicator
sub = w.new_group([0, 1])
if r in (0, 1):
    s = to_device(np.full(2, r + 1.0, np.float32)); sub.all_reduce(s, "sum"); close(s, [3.0, 3.0])
else:
    assert sub is None
print("OK", r, api.calls)
"""


@pytest.mark.parametrize("n,has_avg", [(2, True), (3, False)])
def test_collectives_through_nccl_calls_match_numpy(n, has_avg):
    res = run_mpi(COLLECTIVES, n=n, timeout=90, args=["1" if has_avg else "0"])
    res.check()
    assert res.stdout.count("OK") == n, res.output


MISMATCH = COMMON + r"""
api = FakeCudaAPI()
w = NCCLCommunicator(MPICommunicator(), api=api)
a = to_device(np.arange(4, dtype=np.float32) + w.rank)
before = a.copy()
calls = api.calls
try:
    if w.rank == 0:
        w.all_reduce(a, "sum")
    else:
        w.broadcast(a, 0)
except comm.CommError as e:
    assert api.calls == calls, "NCCL was called despite the mismatch"
    assert (a == before).all(), "the array changed"
    print("MISMATCH", w.rank, str(e).replace("\n", " | "))
"""


def test_mismatched_calls_raise_on_every_rank_before_nccl_runs():
    res = run_mpi(MISMATCH, n=2, timeout=60)
    res.check()
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("MISMATCH")]
    assert len(lines) == 2, res.output
    for ln in lines:
        assert "rank 0: all_reduce(shape=(4,), dtype=float32, op=sum)" in ln, ln
        assert "rank 1: broadcast(shape=(4,), dtype=float32, root=0)" in ln, ln
        assert "NCCL was not called" in ln


HANG = COMMON + r"""
# rank 1's third NCCL call never completes (a peer stalled inside the collective)
world = comm.init()  # failure handling (excepthook, abort) as a real job has it
api = FakeCudaAPI(hang_after=2 if world.rank == 1 else None)
w = NCCLCommunicator(MPICommunicator(), api=api)
for i in range(3):
    a = to_device(np.ones(8, np.float32))
    w.all_reduce(a, "sum")
print("UNREACHABLE on rank", w.rank)
"""


def test_a_collective_that_never_completes_ends_the_job_naming_rank_and_op():
    res = run_mpi(HANG, n=2, timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "2"})
    assert res.returncode != 0, res.output
    assert not res.timed_out, "the job hung instead of ending within the collective timeout"
    assert "all_reduce (NCCL collective #3) on rank 1" in res.stderr, res.output
    assert "did not complete within 2 s" in res.stderr
    assert "UNREACHABLE on rank 1" not in res.stdout
    assert "NCCL communicator was aborted" in res.stderr


BAD_DTYPE = COMMON + r"""
w = NCCLCommunicator(MPICommunicator(), api=FakeCudaAPI())
try:
    w.all_reduce(to_device(np.zeros(3, np.complex64)), "sum")
except TypeError as e:
    print("TYPE", str(e))
p = to_device(np.zeros(3, np.float32))
try:
    if w.rank == 0:
        w.send(p, 1)
    else:
        w.recv(to_device(np.zeros(5, np.float32)), 0)
except comm.CommError as e:
    print("P2P", str(e))
"""


def test_unsupported_dtype_and_mismatched_recv_explain_the_fix():
    res = run_mpi(BAD_DTYPE, n=2, timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "3"})
    assert res.stdout.count("TYPE NCCL has no type for dtype complex64") == 2, res.output
    assert "P2P recv from rank 0 (tag 0) on rank 1: the peer sent shape (3,) dtype float32" in res.stdout, res.output
