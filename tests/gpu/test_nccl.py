"""The NCCL backend on a real GPU (skipped without one). The same test code runs on CuPy's
host stand-in (tests/host_cuda/test_nccl_host_cuda.py), and the communicator's bookkeeping
is tested on CPU ranks by tests/distributed/test_nccl_logic.py.

* One rank in-process (a world of one): every collective through NCCL on CuPy arrays, each
  result checked against the input's host copy, and NCCL's calls counted through a wrapper
  of the CUDA API in use: a collective that skips NCCL, hands back its input where a new
  array is due, leaves an ``out`` buffer unwritten (``out`` is filled with other values
  first) or gets a shape or dtype wrong fails, for every dtype and for async handles.
* Several ranks under ``shardflow run`` (:data:`RANKS`): the inputs differ per rank, and
  every rank rebuilds all ranks' inputs and computes each result with NumPy. Where the
  ranks outnumber the GPUs they share one, which NCCL may refuse ("Duplicate GPU
  detected"): the test then checks that the refusal names the fix and skips with NCCL's
  words as the reason.
"""

from collections import Counter

import numpy as np
import pytest

from shardflow.backend.xp import cupy
from shardflow.comm.local import LocalCommunicator
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.comm.nccl_lib import cuda_api
from shardflow.testing.mpi import run_mpi

DTYPES = (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_)
OPS = ("sum", "avg", "max", "min", "prod")


class CountingAPI:
    """A CUDA/NCCL API (``CudaAPI``'s surface) whose NCCL communicators count their calls."""

    def __init__(self, inner):
        self._inner, self.calls = inner, Counter()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def make_comm(self, size, uid, rank, control):
        return _CountingComm(self._inner.make_comm(size, uid, rank, control), self.calls)


class _CountingComm:
    def __init__(self, comm, calls):
        self._comm, self._calls = comm, calls

    def __getattr__(self, name):
        attr = getattr(self._comm, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self._calls[name] += 1
            return attr(*args, **kwargs)

        return counted


def _data(shape, dtype, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return g.random(shape) < 0.5
    if dt.kind in "iu":
        return g.integers(1, 100, size=shape).astype(dt)
    return g.uniform(-4, 4, size=shape).astype(dt)


def _other(a: np.ndarray) -> np.ndarray:
    """Values that differ from ``a`` everywhere (to fill an ``out`` buffer before the call)."""
    return np.logical_not(a) if a.dtype == np.bool_ else (a + 1).astype(a.dtype)


def _same(got, want: np.ndarray, cp) -> None:
    assert isinstance(got, cp.ndarray), type(got)
    host = cp.asnumpy(got)
    assert host.dtype == want.dtype and host.shape == want.shape, (host.dtype, host.shape,
                                                                   want.dtype, want.shape)
    np.testing.assert_array_equal(host, want)


def test_every_collective_with_one_rank_on_cupy_arrays():
    cp = cupy()
    api = CountingAPI(cuda_api())
    w = NCCLCommunicator(LocalCommunicator(), api=api)
    try:
        _one_rank(cp, w, api)
    finally:
        w.free()


def _one_rank(cp, w, api) -> None:
    calls = api.calls
    for seed, dt in enumerate(DTYPES):
        xh = _data((4, 6), dt, seed)
        x = cp.asarray(xh)
        for op in OPS:  # a world of one reduces to its input, in place, through NCCL
            if op == "avg" and xh.dtype.kind != "f":
                continue
            a = x.copy()
            before = calls["allReduce"]
            assert w.all_reduce(a, op) is a
            assert calls["allReduce"] == before + 1, (op, dt)
            _same(a, xh, cp)
        # all_gather: a new (1, 4, 6) array, or the given out, written
        g = w.all_gather(x)
        assert g.shape == (1, 4, 6) and api.ptr(g) != api.ptr(x)
        _same(g, xh[None], cp)
        out = cp.asarray(_other(xh[None]))
        assert w.all_gather(x, out=out) is out
        _same(out, xh[None], cp)
        _same(x, xh, cp)  # the input is left as it was
        if xh.dtype.kind == "f":  # reduce_scatter: rank 0's block of 4 rows is all of them
            for op in ("sum", "avg"):
                rs = w.reduce_scatter(x, op)
                assert api.ptr(rs) != api.ptr(x)
                _same(rs, xh, cp)
            out = cp.asarray(_other(xh))
            assert w.reduce_scatter(x, "sum", out=out) is out
            _same(out, xh, cp)
        a2a = w.all_to_all(x)  # one block, sent to itself
        assert api.ptr(a2a) != api.ptr(x)
        _same(a2a, xh, cp)
        out = cp.asarray(_other(xh))
        assert w.all_to_all(x, out=out) is out
        _same(out, xh, cp)
        b = x.copy()
        w.broadcast(b, 0)
        _same(b, xh, cp)
    n = len(DTYPES)
    assert calls["allGather"] == 2 * n and calls["bcast"] == n, calls
    assert calls["reduceScatter"] == 3 * 3, calls  # float16, float32, float64
    assert calls["send"] == calls["recv"] == 2 * n, calls  # all_to_all: grouped send/recv
    # a non-contiguous view: packed, reduced, written back into its base and nowhere else
    baseh = _data((6, 8), np.float32, 50)
    base = cp.asarray(baseh)
    w.all_reduce(base[::2, 1::3].T, "sum")
    _same(base, baseh, cp)
    # async handles: each its own result, waited in reverse order
    xs = [_data((3, 5), np.float32, 60 + i) for i in range(3)]
    works = [w.all_gather(cp.asarray(v), async_op=True) for v in xs]
    works += [w.reduce_scatter(cp.asarray(v), "avg", async_op=True) for v in xs]
    for i in reversed(range(3)):
        _same(works[3 + i].wait(), xs[i], cp)
        _same(works[i].wait(), xs[i][None], cp)
    # host (NumPy) arrays go through the control communicator, not NCCL
    before = sum(calls.values())
    h = _data((3,), np.float32, 70)
    hg = w.all_gather(h)
    assert isinstance(hg, np.ndarray)
    np.testing.assert_array_equal(hg, h[None])
    assert sum(calls.values()) == before, calls


RANKS = r"""
import numpy as np
from shardflow import comm
from shardflow.backend.xp import cupy

cp = cupy()
gpus = cp.cuda.runtime.getDeviceCount()
try:
    w = comm.init("nccl")
except comm.CommError as e:
    print(f"REFUSED gpus={gpus}", str(e).replace("\n", " "), flush=True)
    raise SystemExit(0)
assert w.backend == "nccl", w.backend
r, n = w.rank, w.size


def data(k, shape, dtype, seed):
    # rank k's input, rebuilt on every rank: each result is computed here with NumPy
    g = np.random.default_rng(1000 * seed + k)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return g.random(shape) < 0.5
    if dt.kind in "iu":
        return g.integers(1, 4, size=shape).astype(dt)
    return g.uniform(0.5, 2.0, size=shape).astype(dt)


def check(got, want, dtype):
    host = cp.asnumpy(got)
    want = np.asarray(want)
    assert host.dtype == np.dtype(dtype) and host.shape == want.shape, (host.dtype, host.shape, want.shape)
    tol = {"f": 4e-3 if host.dtype.itemsize == 2 else 1e-5}.get(host.dtype.kind, 0)
    np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


REFS = {"sum": np.sum, "avg": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
seed = 0
for op, ref in REFS.items():
    for dt in (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8):
        if op == "avg" and np.dtype(dt).kind != "f":
            continue
        seed += 1
        xs = np.stack([data(k, (3, 5), dt, seed) for k in range(n)])
        a = cp.asarray(xs[r])
        assert w.all_reduce(a, op) is a
        check(a, ref(xs.astype(np.float64), axis=0), dt)
bs = np.stack([data(k, (9,), np.bool_, 80) for k in range(n)])
b = cp.asarray(bs[r])
w.all_reduce(b, "sum")  # a sum of bools is a logical or (PyTorch's NCCL mapping)
check(b, bs.any(0), np.bool_)
# a non-contiguous view: reduced, written back into its base and nowhere else
base = np.stack([data(k, (6, 8), np.float32, 81) for k in range(n)])
mine = cp.asarray(base[r])
w.all_reduce(mine[::2, 1::3].T, "sum")
want = base[r].copy()
want[::2, 1::3] = base[:, ::2, 1::3].sum(0)
check(mine, want, np.float32)
for src in range(n):
    x = cp.asarray(data(r, (4, 3), np.float64, 82))
    w.broadcast(x, src)
    check(x, data(src, (4, 3), np.float64, 82), np.float64)
for dt in (np.float16, np.float32, np.int64, np.bool_):
    g = w.all_gather(cp.asarray(data(r, (2, 3), dt, 83)))
    check(g, np.stack([data(k, (2, 3), dt, 83) for k in range(n)]), dt)
for op in ("sum", "avg"):
    xs = np.stack([data(k, (2 * n, 3), np.float32, 84) for k in range(n)])
    rs = w.reduce_scatter(cp.asarray(xs[r]), op)
    check(rs, REFS[op](xs, axis=0)[2 * r:2 * r + 2], np.float32)
a2a = w.all_to_all(cp.asarray(data(r, (2 * n, 4), np.int32, 85)))
check(a2a, np.concatenate([data(k, (2 * n, 4), np.int32, 85)[2 * r:2 * r + 2] for k in range(n)]),
      np.int32)
# async handles, waited in reverse order
works = [w.all_reduce(cp.asarray(data(r, (5,), np.float32, 86 + i)), "sum", async_op=True)
         for i in range(3)]
for i in reversed(range(3)):
    check(works[i].wait(), np.sum([data(k, (5,), np.float32, 86 + i) for k in range(n)], 0),
          np.float32)
# point to point: a grouped ring, then a plain send/recv pair
x = cp.asarray(data(r, (4,), np.float64, 90))
y = cp.zeros(4, dtype=cp.float64)
for wk in w.batch_p2p([("send", x, (r + 1) % n, 0), ("recv", y, (r - 1) % n, 0)]):
    wk.wait()
check(y, data((r - 1) % n, (4,), np.float64, 90), np.float64)
if r < 2:
    z = cp.asarray(data(r, (3, 2), np.float32, 91))
    got = cp.zeros((3, 2), dtype=cp.float32)
    if r == 0:
        w.send(z, 1)
        w.recv(got, 1)
    else:
        w.recv(got, 0)
        w.send(z, 0)
    check(got, data(1 - r, (3, 2), np.float32, 91), np.float32)
# host arrays go through the control communicator
h = data(r, (3,), np.float32, 92)
w.all_reduce(h, "sum")
np.testing.assert_allclose(h, np.sum([data(k, (3,), np.float32, 92) for k in range(n)], 0),
                           rtol=1e-6)
if n >= 3:  # a sub-group gets its own NCCL communicator
    sub = w.new_group([0, 2])
    if r in (0, 2):
        s = cp.asarray(data(r, (2,), np.float32, 93))
        sub.all_reduce(s, "sum")
        check(s, data(0, (2,), np.float32, 93) + data(2, (2,), np.float32, 93), np.float32)
    else:
        assert sub is None
print("OK", r, flush=True)
"""


def refusal(res, n: int) -> str | None:
    """NCCL's refusal to put the ranks on the machine's GPUs (None: every rank printed OK)."""
    res.check()
    refused = [ln for ln in res.stdout.splitlines() if ln.startswith("REFUSED")]
    if refused:
        gpus = int(refused[0].split()[1].removeprefix("gpus="))
        assert gpus < n, f"NCCL refused {n} ranks on {gpus} GPUs (one each):\n{res.output}"
        assert "launch one rank per GPU" in refused[0], refused[0]  # the refusal names the fix
        return refused[0]
    assert res.stdout.count("OK") == n, res.output
    return None


@pytest.mark.mpi
def test_two_ranks_over_nccl_give_numpy_results():
    res = run_mpi(RANKS, n=2, timeout=120)
    refused = refusal(res, 2)
    if refused is not None:
        pytest.skip(f"NCCL refused two ranks on this machine: {refused}")
