"""Every collective of the communicator (``comm.init()``) against NumPy on random data.

Each rank rebuilds every rank's input from its seed, so the expected value is an independent
NumPy computation. Every reduce op (the bitwise ones on integers); float32/float64/int64; non-contiguous views (the result
lands in the base, untouched elements stay); zero-size arrays; float16/bfloat16 (through
float32); broadcast from every root; all_gather (``out=``); reduce_scatter; all_to_all;
send/recv around a ring; async handles waited in reverse; objects; a sub-group."""

import ml_dtypes
import numpy as np

from shardflow import comm

from ._common import REDUCE_REFS, close
from ._common import rank_data as data


def check_all_reduce(w, r, n):
    # every op, float32/float64/int64, contiguous / non-contiguous / zero-size
    for seed, (op, ref) in enumerate(REDUCE_REFS.items()):
        for dt in (np.float32, np.float64, np.int64):
            if op == "avg" and dt is np.int64:
                continue
            xs = np.stack([data(k, (4, 6), dt, seed) for k in range(n)])
            a = data(r, (4, 6), dt, seed)
            w.all_reduce(a, op)
            close(a, ref(xs), (op, dt))
            base = np.stack([data(k, (6, 8), dt, seed + 50) for k in range(n)])
            mine = data(r, (6, 8), dt, seed + 50)
            view = mine[::2, 1::3].T  # non-contiguous view: result must land in `mine`
            w.all_reduce(view, op)
            close(mine[::2, 1::3].T, ref(base[:, ::2, 1::3].transpose(0, 2, 1)), (op, dt, "view"))
            close(mine[1::2], base[r, 1::2], (op, dt, "untouched rows"))
            z = np.zeros((0, 3), dt)
            assert w.all_reduce(z, op).shape == (0, 3)
    # the bitwise ops (torch's BAND / BOR / BXOR): integer arrays, refused for floats and bool
    for op, ufunc in (("band", np.bitwise_and), ("bor", np.bitwise_or), ("bxor", np.bitwise_xor)):
        for dt in (np.int64, np.uint8, np.int32):
            xs = np.stack([np.random.default_rng(100 + k).integers(0, 100, (3, 4)).astype(dt) for k in range(n)])
            a = xs[r].copy()
            w.all_reduce(a, op)
            assert np.array_equal(a, ufunc.reduce(xs, axis=0)), (op, dt)
        for bad in (np.ones(2, np.float32), np.ones(2, bool)):
            try:
                w.all_reduce(bad, op)
            except RuntimeError as e:
                assert "non-integral dtype" in str(e), e
            else:
                raise AssertionError(f"{op} of {bad.dtype} did not raise")
    # half precision goes through float32
    for dt in (np.float16, ml_dtypes.bfloat16):
        xs = [data(k, (5,), np.float32, 7).astype(dt) for k in range(n)]
        a = xs[r].copy()
        w.all_reduce(a, "sum")
        assert a.dtype == np.dtype(dt)
        want = np.sum([x.astype(np.float32) for x in xs], 0).astype(dt).astype(np.float32)
        close(a.astype(np.float32), want, dt, tol=1e-2)


def check_broadcast_gather_scatter(w, r, n):
    # broadcast from every root, non-contiguous target
    for src in range(n):
        a = data(r, (3, 5), np.float32, 11)
        w.broadcast(a, src)
        close(a, data(src, (3, 5), np.float32, 11), ("broadcast", src))
        b = data(r, (4, 4), np.float64, 12)
        w.broadcast(b[:, ::2], src)
        close(b[:, ::2], data(src, (4, 4), np.float64, 12)[:, ::2], ("broadcast view", src))
        close(b[:, 1::2], data(r, (4, 4), np.float64, 12)[:, 1::2], ("untouched", src))
    # all_gather (plain, non-contiguous input, out=, zero-size)
    xs = np.stack([data(k, (2, 3), np.float32, 13) for k in range(n)])
    close(w.all_gather(xs[r]), xs, "all_gather")
    close(w.all_gather(xs[r].T), xs.transpose(0, 2, 1), "all_gather view")
    out = np.empty((n * 2, 3), np.float32)
    w.all_gather(xs[r], out=out)
    close(out, xs.reshape(n * 2, 3), "all_gather out=")
    assert w.all_gather(np.zeros((0,), np.float32)).shape == (n, 0)
    # reduce_scatter (sum / avg / max), non-contiguous input
    for op in ("sum", "avg", "max"):
        full = np.stack([data(k, (n * 2, 3), np.float32, 14) for k in range(n)])
        got = w.reduce_scatter(data(r, (n * 2, 3), np.float32, 14), op)
        close(got, REDUCE_REFS[op](full)[2 * r: 2 * r + 2], ("reduce_scatter", op))
        t = data(r, (3, n * 2), np.float32, 14).T
        got = w.reduce_scatter(t, op)
        fullT = np.stack([data(k, (3, n * 2), np.float32, 14).T for k in range(n)])
        close(got, REDUCE_REFS[op](fullT)[2 * r: 2 * r + 2], ("reduce_scatter view", op))
    assert w.reduce_scatter(np.zeros((0, 2), np.float32)).shape == (0, 2)
    # the large path (data above the signature block: an all-to-all, then a rank-order sum):
    # every reduce op, blocking and async into out=, float64, half through float32
    for seed, (op, ref) in enumerate(REDUCE_REFS.items()):
        full = np.stack([data(k, (n * 64, 5), np.float64, 40 + seed) for k in range(n)])
        got = w.reduce_scatter(full[r].copy(), op)
        assert got.dtype == np.float64 and got.shape == (64, 5)
        close(got, ref(full)[64 * r: 64 * r + 64], ("reduce_scatter large", op))
        out = np.full((64, 5), np.nan)
        w.reduce_scatter(full[r].copy(), op, out=out, async_op=True).wait()
        close(out, ref(full)[64 * r: 64 * r + 64], ("reduce_scatter large async out=", op))
    xs = [data(k, (n * 600,), np.float32, 48).astype(ml_dtypes.bfloat16) for k in range(n)]
    got = w.reduce_scatter(xs[r], "avg")
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    want = (np.sum([x.astype(np.float32) for x in xs], 0) / n)[600 * r: 600 * r + 600]
    close(got.astype(np.float32), want.astype(ml_dtypes.bfloat16).astype(np.float32),
          "reduce_scatter large bfloat16", tol=1e-2)
    # all_to_all
    xs = [data(k, (n * 2, 2), np.float32, 15) for k in range(n)]
    got = w.all_to_all(xs[r])
    close(got, np.concatenate([xs[k][2 * r: 2 * r + 2] for k in range(n)]), "all_to_all")


def check_p2p_async_objects_groups(w, r, n):
    # send / recv ring, async, non-contiguous receive buffer
    nxt, prv = (r + 1) % n, (r - 1) % n
    s = w.send(data(r, (3, 4), np.float32, 16), nxt, async_op=True)
    buf = np.zeros((4, 3), np.float32).T
    w.recv(buf, prv)
    s.wait()
    close(buf, data(prv, (3, 4), np.float32, 16), "recv")
    # async all_reduce: several in flight, waited in reverse order
    works, arrs = [], []
    for i in range(4):
        a = data(r, (100 + i,), np.float32, 20 + i)
        arrs.append(a)
        works.append(w.all_reduce(a, "sum", async_op=True))
    for i in reversed(range(4)):
        works[i].wait()
        want = np.sum([data(k, (100 + i,), np.float32, 20 + i) for k in range(n)], 0)
        close(arrs[i], want, ("async", i))
    w.barrier()
    w.barrier(async_op=True).wait()
    # objects
    assert w.all_gather_object({"rank": r}) == [{"rank": k} for k in range(n)]
    assert w.broadcast_object(("x", r) if r == 0 else None, 0) == ("x", 0)
    # sub-group of ranks {0, n-1}
    g = w.new_group([0, n - 1])
    if r in (0, n - 1):
        a = data(r, (3,), np.float32, 30)
        g.all_reduce(a)
        close(a, data(0, (3,), np.float32, 30) + data(n - 1, (3,), np.float32, 30), "group")
    else:
        assert g is None


def main(argv):
    w = comm.init()
    check_all_reduce(w, w.rank, w.size)
    check_broadcast_gather_scatter(w, w.rank, w.size)
    check_p2p_async_objects_groups(w, w.rank, w.size)
