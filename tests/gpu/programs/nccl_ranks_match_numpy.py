"""The NCCL backend on several ranks (``comm.init("nccl")``) against NumPy: the inputs differ
per rank, and every rank rebuilds all ranks' inputs and computes each result itself. Every
reduce op and dtype, bool sums (logical or), a non-contiguous view written back into its base
only, broadcast from every root, all_gather, reduce_scatter, all_to_all, async handles waited
in reverse, a grouped send/recv ring and a plain pair, host arrays over the control
communicator, a sub-group from 3 ranks.

Where the ranks outnumber the GPUs they share one, which NCCL may refuse: the program then
prints ``REFUSED gpus=N {NCCL's message}`` and returns (the test checks that the refusal names
the fix). ``argv``: ``host_cuda`` to run on CuPy's host stand-in and the fake NCCL
(tests/host_cuda), nothing on a GPU."""

import numpy as np

from shardflow import comm
from shardflow.backend.xp import cupy

REFS = {"sum": np.sum, "avg": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def data(k, shape, dtype, seed):
    # rank k's input, rebuilt on every rank: each result is computed here with NumPy
    g = np.random.default_rng(1000 * seed + k)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return g.random(shape) < 0.5
    if dt.kind in "iu":
        return g.integers(1, 4, size=shape).astype(dt)
    return g.uniform(0.5, 2.0, size=shape).astype(dt)


def check(cp, got, want, dtype):
    host = cp.asnumpy(got)
    want = np.asarray(want)
    assert host.dtype == np.dtype(dtype) and host.shape == want.shape, (host.dtype, host.shape, want.shape)
    tol = {"f": 4e-3 if host.dtype.itemsize == 2 else 1e-5}.get(host.dtype.kind, 0)
    np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def check_reductions(cp, w, r, n):
    seed = 0
    for op, ref in REFS.items():
        for dt in (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8):
            if op == "avg" and np.dtype(dt).kind != "f":
                continue
            seed += 1
            xs = np.stack([data(k, (3, 5), dt, seed) for k in range(n)])
            a = cp.asarray(xs[r])
            assert w.all_reduce(a, op) is a
            check(cp, a, ref(xs.astype(np.float64), axis=0), dt)
    bs = np.stack([data(k, (9,), np.bool_, 80) for k in range(n)])
    b = cp.asarray(bs[r])
    w.all_reduce(b, "sum")  # a sum of bools is a logical or (PyTorch's NCCL mapping)
    check(cp, b, bs.any(0), np.bool_)
    # a non-contiguous view: reduced, written back into its base and nowhere else
    base = np.stack([data(k, (6, 8), np.float32, 81) for k in range(n)])
    mine = cp.asarray(base[r])
    w.all_reduce(mine[::2, 1::3].T, "sum")
    want = base[r].copy()
    want[::2, 1::3] = base[:, ::2, 1::3].sum(0)
    check(cp, mine, want, np.float32)


def check_other_collectives(cp, w, r, n):
    for src in range(n):
        x = cp.asarray(data(r, (4, 3), np.float64, 82))
        w.broadcast(x, src)
        check(cp, x, data(src, (4, 3), np.float64, 82), np.float64)
    for dt in (np.float16, np.float32, np.int64, np.bool_):
        g = w.all_gather(cp.asarray(data(r, (2, 3), dt, 83)))
        check(cp, g, np.stack([data(k, (2, 3), dt, 83) for k in range(n)]), dt)
    for op in ("sum", "avg"):
        xs = np.stack([data(k, (2 * n, 3), np.float32, 84) for k in range(n)])
        rs = w.reduce_scatter(cp.asarray(xs[r]), op)
        check(cp, rs, REFS[op](xs, axis=0)[2 * r:2 * r + 2], np.float32)
    a2a = w.all_to_all(cp.asarray(data(r, (2 * n, 4), np.int32, 85)))
    check(cp, a2a, np.concatenate([data(k, (2 * n, 4), np.int32, 85)[2 * r:2 * r + 2]
                                   for k in range(n)]), np.int32)
    # async handles, waited in reverse order
    works = [w.all_reduce(cp.asarray(data(r, (5,), np.float32, 86 + i)), "sum", async_op=True)
             for i in range(3)]
    for i in reversed(range(3)):
        check(cp, works[i].wait(), np.sum([data(k, (5,), np.float32, 86 + i) for k in range(n)], 0),
              np.float32)


def check_p2p_host_and_groups(cp, w, r, n):
    # point to point: a grouped ring, then a plain send/recv pair
    x = cp.asarray(data(r, (4,), np.float64, 90))
    y = cp.zeros(4, dtype=cp.float64)
    for wk in w.batch_p2p([("send", x, (r + 1) % n, 0), ("recv", y, (r - 1) % n, 0)]):
        wk.wait()
    check(cp, y, data((r - 1) % n, (4,), np.float64, 90), np.float64)
    if r < 2:
        z = cp.asarray(data(r, (3, 2), np.float32, 91))
        got = cp.zeros((3, 2), dtype=cp.float32)
        if r == 0:
            w.send(z, 1)
            w.recv(got, 1)
        else:
            w.recv(got, 0)
            w.send(z, 0)
        check(cp, got, data(1 - r, (3, 2), np.float32, 91), np.float32)
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
            check(cp, s, data(0, (2,), np.float32, 93) + data(2, (2,), np.float32, 93), np.float32)
        else:
            assert sub is None


def main(argv):
    if argv and argv[0] == "host_cuda":
        from tests.doubles import host_cuda

        host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
    cp = cupy()
    gpus = cp.cuda.runtime.getDeviceCount()
    try:
        w = comm.init("nccl")
    except comm.CommError as e:
        print(f"REFUSED gpus={gpus}", str(e).replace("\n", " "), flush=True)
        return
    assert w.backend == "nccl", w.backend
    r, n = w.rank, w.size
    check_reductions(cp, w, r, n)
    check_other_collectives(cp, w, r, n)
    check_p2p_host_and_groups(cp, w, r, n)
