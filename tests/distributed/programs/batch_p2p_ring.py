"""``dist.batch_isend_irecv`` around a ring of ranks, above MPI's eager limit (unbatched
blocking sends would all wait on each other), then a batch of mixed dtypes and shapes between
ranks 0 and 1 (the others do nothing).

``argv[0]``: ``cpu`` (MPI: every op non-blocking) or ``cuda`` (CuPy's host stand-in and the
fake NCCL: the four device ops of each batch must be one NCCL group, counted once). The
process group is destroyed at the end, so ``cpu`` then ``cuda`` can share one launch."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist

N = 16384  # 64 kB of float32: above the eager limit


def data(rank, k):
    return (np.arange(N, dtype=np.float32) + 1000 * rank + k).reshape(128, 128)


def main(argv):
    dev = argv[0]
    api = None
    if dev == "cuda":
        from tests.doubles import host_cuda

        api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
        dist.init_process_group("nccl")
    else:
        assert dev == "cpu", dev
        dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    nxt, prv = (r + 1) % n, (r - 1) % n
    for k in range(3):
        right, left = sf.tensor(data(r, k), device=dev), sf.tensor(data(r, -k), device=dev)
        from_prv = sf.zeros(128, 128, device=dev)
        from_nxt = sf.zeros(128, 128, device=dev)
        v0 = from_prv._version
        before = api.calls if api is not None else 0
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, right, nxt),
                                        dist.P2POp(dist.irecv, from_prv, prv),
                                        dist.P2POp(dist.isend, left, prv, tag=1),
                                        dist.P2POp(dist.irecv, from_nxt, nxt, tag=1)])
        assert len(works) == 4
        for w in works:
            assert w.wait() is True
        assert from_prv._version > v0  # the receive bumped the version, as dist.irecv does
        assert from_prv.device.type == dev
        np.testing.assert_array_equal(from_prv.cpu().numpy(), data(prv, k))
        np.testing.assert_array_equal(from_nxt.cpu().numpy(), data(nxt, -k))
        if api is not None:  # the four device sends/receives were one NCCL group
            assert api.calls == before + 1, (before, api.calls)
    # dtypes and shapes of one batch may differ; ranks outside a pair just do nothing
    if r < 2:
        peer = 1 - r
        a = sf.tensor(np.full((3, 5), r, dtype=np.int64), device=dev)
        b = sf.zeros(3, 5, dtype=sf.int64, device=dev)
        c = sf.tensor(np.full(7, r + 0.5, dtype=np.float64), device=dev)
        d = sf.zeros(7, dtype=sf.float64, device=dev)
        ops = [dist.P2POp(dist.irecv, b, peer), dist.P2POp(dist.isend, a, peer),
               dist.P2POp(dist.isend, c, peer, tag=2), dist.P2POp(dist.irecv, d, peer, tag=2)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        np.testing.assert_array_equal(b.cpu().numpy(), np.full((3, 5), peer))
        np.testing.assert_array_equal(d.cpu().numpy(), np.full(7, peer + 0.5))
    dist.barrier()
    dist.destroy_process_group()  # so that the next backend can run in this launch
