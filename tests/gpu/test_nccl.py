"""The NCCL backend on a real GPU (skipped without one; its bookkeeping is also tested on
CPU by tests/distributed/test_nccl_logic.py against a stand-in).

* One rank in-process: every collective through NCCL on CuPy arrays against NumPy.
* Two ranks on the machine's GPUs: the same under ``shardflow run``; on a machine with one
  GPU both ranks share it, which NCCL may refuse ("Duplicate GPU detected"): then the test
  checks that the refusal is the clear error that names the fix.
"""

import numpy as np
import pytest

from shardflow.backend.xp import cuda_is_available, cupy
from shardflow.testing.mpi import run_mpi


def test_every_collective_with_one_rank_on_cupy_arrays():
    from shardflow.comm.local import LocalCommunicator
    from shardflow.comm.nccl import NCCLCommunicator

    cp = cupy()
    w = NCCLCommunicator(LocalCommunicator())
    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    for op in ("sum", "avg", "max", "min", "prod"):
        a = x.copy()
        assert w.all_reduce(a, op) is a
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(x))
    v = x.copy()[:, ::2]  # non-contiguous
    w.all_reduce(v, "sum")
    np.testing.assert_allclose(cp.asnumpy(v), cp.asnumpy(x[:, ::2]))
    b = x.copy()
    w.broadcast(b, 0)
    np.testing.assert_allclose(cp.asnumpy(b), cp.asnumpy(x))
    g = w.all_gather(x)
    assert isinstance(g, cp.ndarray) and g.shape == (1, 3, 4)
    rs = w.reduce_scatter(x)
    np.testing.assert_allclose(cp.asnumpy(rs), cp.asnumpy(x))
    a2a = w.all_to_all(x)
    np.testing.assert_allclose(cp.asnumpy(a2a), cp.asnumpy(x))
    works = [w.all_reduce(x.copy() + i, "sum", async_op=True) for i in range(3)]
    for i, wk in enumerate(works):
        np.testing.assert_allclose(cp.asnumpy(wk.wait()), cp.asnumpy(x) + i)
    for dt in (cp.float16, cp.float64, cp.int32, cp.int64, cp.uint8):
        a = cp.ones(7, dtype=dt)
        w.all_reduce(a, "sum")
        assert a.dtype == dt and float(a.sum()) == 7
    w.free()


TWO_RANKS = r"""
import numpy as np
from shardflow import comm
from shardflow.backend.xp import cupy
cp = cupy()
try:
    w = comm.init("nccl")
except comm.CommError as e:
    print("REFUSED", str(e).replace("\n", " "))
    raise SystemExit(0)
assert w.backend == "nccl", w.backend
r, n = w.rank, w.size
a = cp.full(5, r + 1.0, dtype=cp.float32)
w.all_reduce(a, "sum")
assert float(a[0]) == n * (n + 1) / 2
g = w.all_gather(cp.full(2, float(r), dtype=cp.float32))
assert cp.asnumpy(g).tolist() == [[float(k)] * 2 for k in range(n)]
print("OK", r)
"""


@pytest.mark.mpi
def test_two_ranks_over_nccl_or_the_clear_refusal():
    if not cuda_is_available():
        pytest.skip("no CUDA device")
    res = run_mpi(TWO_RANKS, n=2, timeout=120)
    res.check()
    if "REFUSED" in res.stdout:
        assert "launch one rank per GPU" in res.stdout, res.output
    else:
        assert res.stdout.count("OK") == 2, res.output
