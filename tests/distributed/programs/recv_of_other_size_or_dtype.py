"""A recv into a buffer smaller, larger or of another dtype than what was sent raises on the
receiver with both shapes and dtypes; afterwards point-to-point still works, and several
receives from one (source, tag) in flight, waited on in reverse, keep MPI's order."""

import numpy as np

from shardflow import comm
from shardflow.comm import CommError

CASES = [((6,), np.float32, (4,), np.float32),   # receiver smaller: MPI_ERR_TRUNCATE
         ((4,), np.float32, (6,), np.float32),   # receiver larger: short message
         ((4,), np.int32, (4,), np.float32),     # same bytes, other dtype
         ((5000,), np.float64, (4000,), np.float64)]


def main(argv):
    w = comm.init()
    r = w.rank
    for i, (sshape, sdt, rshape, rdt) in enumerate(CASES):
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
