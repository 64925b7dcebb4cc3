"""torch.distributed's functions on Tensors (``shardflow.distributed``, backend "gloo" asked
for, "mpi" given) against NumPy: all_reduce (version bump, async), broadcast, all_gather
(list and into a tensor), reduce_scatter (tensor and list), send/recv, barrier, objects,
a sub-group, destroy_process_group."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist


def data(rank, shape, seed):
    return np.random.default_rng(100 * seed + rank).standard_normal(shape).astype(np.float32)


def main(argv):
    dist.init_process_group(backend="gloo")
    r, n = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "gloo"  # the name asked for (PyTorch); the engine is MPI
    t = sf.tensor(data(r, (3, 4), 1))
    v0 = t._version
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    assert t._version > v0
    assert np.allclose(t.numpy(), sum(data(k, (3, 4), 1) for k in range(n)), atol=1e-5)
    t = sf.tensor(data(r, (3, 4), 2))
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() is True
    assert np.allclose(t.numpy(), sum(data(k, (3, 4), 2) for k in range(n)) / n, atol=1e-5)
    t = sf.tensor(data(r, (5,), 3))
    dist.broadcast(t, src=n - 1)
    assert np.allclose(t.numpy(), data(n - 1, (5,), 3))
    outs = [sf.zeros(2, 2) for _ in range(n)]
    dist.all_gather(outs, sf.tensor(data(r, (2, 2), 4)))
    for k in range(n):
        assert np.allclose(outs[k].numpy(), data(k, (2, 2), 4)), k
    big = sf.zeros(n * 2, 2)
    dist.all_gather_into_tensor(big, sf.tensor(data(r, (2, 2), 5)))
    assert np.allclose(big.numpy(), np.concatenate([data(k, (2, 2), 5) for k in range(n)]))
    out = sf.zeros(2, 3)
    dist.reduce_scatter_tensor(out, sf.tensor(data(r, (2 * n, 3), 6)))
    ref = sum(data(k, (2 * n, 3), 6) for k in range(n))[2 * r: 2 * r + 2]
    assert np.allclose(out.numpy(), ref, atol=1e-5)
    out = sf.zeros(3)
    dist.reduce_scatter(out, [sf.tensor(data(r, (n, 3), 7)[j]) for j in range(n)],
                        op=dist.ReduceOp.MAX)
    assert np.allclose(out.numpy(), np.max([data(k, (n, 3), 7)[r] for k in range(n)], 0))
    if r == 0:
        dist.send(sf.tensor(data(0, (4,), 8)), dst=1)
    elif r == 1:
        got = sf.zeros(4)
        assert dist.recv(got, src=0) == 0
        assert np.allclose(got.numpy(), data(0, (4,), 8))
    dist.barrier()
    objs = [None] * n
    dist.all_gather_object(objs, r * 10)
    assert objs == [k * 10 for k in range(n)]
    g = dist.new_group([0, 1])
    if r < 2:
        t = sf.tensor(data(r, (2,), 9))
        dist.all_reduce(t, group=g)
        assert np.allclose(t.numpy(), data(0, (2,), 9) + data(1, (2,), 9), atol=1e-5)
        t = sf.tensor(data(r, (2,), 10))
        dist.broadcast(t, src=1, group=g)
        assert np.allclose(t.numpy(), data(1, (2,), 10))
    dist.destroy_process_group()
    assert not dist.is_initialized()
