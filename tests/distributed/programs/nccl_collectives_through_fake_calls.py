"""The NCCL communicator's own logic on CPU ranks (the fake NCCL as its device side): every
collective through the NCCL calls matches NumPy. Every reduce op and dtype (float16 through
the fake's own reduction), non-contiguous views packed and written back, bool sums as logical
or, broadcast from every root, all_gather, reduce_scatter (sum, avg), all_to_all, async
handles, a send/recv ring, host arrays kept off NCCL, sub-groups.

``argv[0]``: ``1`` if the fake NCCL has ncclAvg, ``0`` if ``avg`` must be made of a sum."""

import numpy as np

from tests.doubles.fake_nccl import DeviceArray, to_device

from ._common import REDUCE_REFS, close
from ._common import rank_data as data
from ._fake_nccl import fake_nccl_world


def main(argv):
    w, api = fake_nccl_world(has_avg=argv[0] == "1")
    r, n = w.rank, w.size
    calls = api.calls
    for seed, (op, ref) in enumerate(REDUCE_REFS.items()):
        for dt in (np.float32, np.float64, np.int64, np.float16):
            if op == "avg" and dt is np.int64:
                continue
            tol = 2e-3 if dt is np.float16 else 1e-5
            xs = np.stack([data(k, (4, 6), dt, seed) for k in range(n)])
            a = to_device(data(r, (4, 6), dt, seed))
            out = w.all_reduce(a, op)
            assert out is a and isinstance(out, DeviceArray)
            close(a, ref(xs.astype(np.float64)).astype(dt), (op, dt), tol)
            # a non-contiguous view is packed, reduced and written back into its base
            base = np.stack([data(k, (6, 8), dt, seed + 50) for k in range(n)])
            mine = to_device(data(r, (6, 8), dt, seed + 50))
            w.all_reduce(mine[::2, 1::3].T, op)
            want = ref(base[:, ::2, 1::3].transpose(0, 2, 1).astype(np.float64)).astype(dt)
            close(mine[::2, 1::3].T, want, (op, dt, "view"), tol)
            close(mine[1::2], base[r, 1::2], (op, dt, "untouched rows"))
    assert api.calls > calls  # the data went through the (fake) NCCL calls
    # bool: a sum is a logical or (PyTorch's NCCL mapping)
    bs = [data(k, (9,), np.bool_, 3) for k in range(n)]
    b = to_device(bs[r])
    w.all_reduce(b, "sum")
    assert b.dtype == np.bool_ and (b == np.any(bs, 0)).all()
    # broadcast from every root
    for src in range(n):
        a = to_device(data(r, (3, 5), np.float32, 11))
        w.broadcast(a, src)
        close(a, data(src, (3, 5), np.float32, 11), ("broadcast", src))
    # all_gather, reduce_scatter (sum and avg), all_to_all
    g = w.all_gather(to_device(data(r, (2, 3), np.float32, 12)))
    assert isinstance(g, DeviceArray) and g.shape == (n, 2, 3)
    close(g, np.stack([data(k, (2, 3), np.float32, 12) for k in range(n)]), "all_gather")
    for op in ("sum", "avg"):
        xs = np.stack([data(k, (2 * n, 3), np.float32, 13) for k in range(n)])
        rs = w.reduce_scatter(to_device(data(r, (2 * n, 3), np.float32, 13)), op)
        close(rs, REDUCE_REFS[op](xs)[2 * r:2 * r + 2], ("reduce_scatter", op))
    a2a = w.all_to_all(to_device(data(r, (n * 2, 4), np.int32, 14)))
    want = np.concatenate([data(k, (n * 2, 4), np.int32, 14)[2 * r:2 * r + 2] for k in range(n)])
    close(a2a, want, "all_to_all")
    # async handles complete in order
    works = [w.all_reduce(to_device(np.full(5, r + i, np.float32)), "sum", async_op=True)
             for i in range(3)]
    for i, wk in enumerate(works):
        close(wk.wait(), np.full(5, sum(k + i for k in range(n)), np.float32), ("async", i))
    # send / recv around a ring
    x = to_device(data(r, (4,), np.float64, 15))
    y = to_device(np.zeros(4))
    if r % 2 == 0:
        w.send(x, (r + 1) % n)
        w.recv(y, (r - 1) % n)
    else:
        w.recv(y, (r - 1) % n)
        w.send(x, (r + 1) % n)
    close(y, data((r - 1) % n, (4,), np.float64, 15), "ring")
    # host (NumPy) arrays go through the control communicator, untouched by NCCL
    calls = api.calls
    h = data(r, (3,), np.float32, 16)
    w.all_reduce(h, "sum")
    close(h, np.sum([data(k, (3,), np.float32, 16) for k in range(n)], 0), "host array")
    assert api.calls == calls
    # sub-groups get their own NCCL communicator
    sub = w.new_group([0, 1])
    if r in (0, 1):
        s = to_device(np.full(2, r + 1.0, np.float32))
        sub.all_reduce(s, "sum")
        close(s, [3.0, 3.0], "sub-group")
    else:
        assert sub is None
