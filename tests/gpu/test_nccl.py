"""The NCCL backend on a real GPU (skipped without one). The same test code runs on CuPy's
host stand-in (tests/host_cuda/test_nccl_host_cuda.py), and the communicator's bookkeeping
is tested on CPU ranks by tests/distributed/test_nccl_logic.py.

* One rank in-process (a world of one): every collective through NCCL on CuPy arrays, each
  result checked against the input's host copy, and NCCL's calls counted through a wrapper
  of the CUDA API in use: a collective that skips NCCL, hands back its input where a new
  array is due, leaves an ``out`` buffer unwritten (``out`` is filled with other values
  first) or gets a shape or dtype wrong fails, for every dtype and for async handles.
* Several ranks under mpiexec (:data:`RANKS`, tests/gpu/programs/nccl_ranks_match_numpy.py):
  the inputs differ per rank, and every rank rebuilds all ranks' inputs and computes each
  result with NumPy. Where the ranks outnumber the GPUs they share one, which NCCL may refuse
  ("Duplicate GPU detected"): the test then checks that the refusal names the fix and skips
  with NCCL's words as the reason.
"""

from collections import Counter

import numpy as np
import pytest

from shardflow.backend.xp import cupy
from shardflow.comm.local import LocalCommunicator
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.comm.nccl_lib import cuda_api
from shardflow.testing.mpi import run_program

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


RANKS = "tests.gpu.programs.nccl_ranks_match_numpy"  # the multi-rank program


def refusal(res, n: int) -> str | None:
    """NCCL's refusal to put the ranks on the machine's GPUs (None: every rank ran the whole
    program; ``res.check()`` wants each rank's main() to have returned)."""
    res.check()
    refused = [ln for ln in res.stdout.splitlines() if ln.startswith("REFUSED")]
    if refused:
        gpus = int(refused[0].split()[1].removeprefix("gpus="))
        assert gpus < n, f"NCCL refused {n} ranks on {gpus} GPUs (one each):\n{res.output}"
        assert "launch one rank per GPU" in refused[0], refused[0]  # the refusal names the fix
        return refused[0]
    return None


@pytest.mark.mpi
def test_two_ranks_over_nccl_give_numpy_results():
    res = run_program(RANKS, n=2, timeout=120)
    refused = refusal(res, 2)
    if refused is not None:
        pytest.skip(f"NCCL refused two ranks on this machine: {refused}")
