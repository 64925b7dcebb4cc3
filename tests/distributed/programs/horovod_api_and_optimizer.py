"""The Horovod-style API on real ranks: collectives against NumPy, DistributedOptimizer
(optionally fp16-compressed, with several backward passes per step) against PyTorch's SGD
on the mean loss over every rank's batches.

``argv``: the path of an ``.npz`` of PyTorch's parameters after the run (computed by the test
in its own process, ``torch_reference`` in tests/distributed/test_horovod.py: the ranks do not
import PyTorch), then one or more ``COMPRESSION:PASSES`` runs of the optimizer check, e.g.
``none:1 fp16:1`` (each with a fresh model and optimizer)."""

import numpy as np

import shardflow as sf
import shardflow.horovod as hvd
import shardflow.nn as nn
import shardflow.nn.functional as F
import shardflow.optim as optim


def data(k, seed, shape):
    return np.random.default_rng(1000 * seed + k).standard_normal(shape).astype(np.float32)


def check_collectives(r, world):
    t = sf.tensor(data(r, 1, (3, 2)))
    avg = hvd.allreduce(t)
    want = np.mean([data(k, 1, (3, 2)) for k in range(world)], 0)
    assert np.allclose(avg.numpy(), want, atol=1e-6)
    assert np.allclose(t.numpy(), data(r, 1, (3, 2)))  # out of place
    s = hvd.allreduce(t, op=hvd.Sum)
    assert np.allclose(s.numpy(), np.sum([data(k, 1, (3, 2)) for k in range(world)], 0), atol=1e-5)
    g = hvd.allgather(sf.tensor(data(r, 2, (r + 1, 2))))  # uneven first dims
    assert np.allclose(g.numpy(), np.concatenate([data(k, 2, (k + 1, 2)) for k in range(world)]))
    b = hvd.broadcast(sf.tensor(data(r, 3, (4,))), root_rank=world - 1)
    assert np.allclose(b.numpy(), data(world - 1, 3, (4,)))


def check_optimizer(r, world, compression_name, passes, want):
    """``want``: PyTorch's parameters after the same 3 steps (SGD, momentum 0.9) on the mean
    loss over every rank's batches, from the same initial parameters (rank 0's, seed 5)."""
    compression = hvd.Compression.fp16 if compression_name == "fp16" else hvd.Compression.none
    sf.manual_seed(r + 5)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    objs = hvd.allgather_object([p.numpy().copy() for p in model.parameters()])
    for other in objs:
        for a, c in zip(other, objs[0]):
            assert np.array_equal(a, c)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   compression=compression, backward_passes_per_step=passes)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for step in range(3):
        for m in range(passes):
            x, y = data(r, 10 + 10 * step + m, (4, 5)), data(r, 50 + 10 * step + m, (4, 2))
            F.mse_loss(model(sf.tensor(x)), sf.tensor(y)).backward()
        opt.step()
        opt.zero_grad()
    tol = 2e-3 if compression_name == "fp16" else 2e-5
    assert len(want) == len(list(model.parameters())), (len(want), compression_name)
    for p, q in zip(model.parameters(), want):
        diff = np.abs(p.numpy() - q).max()
        assert np.allclose(p.numpy(), q, rtol=tol, atol=tol), (compression_name, passes, diff)
    # optimizer state broadcast: momentum buffers equal on every rank
    st = hvd.allgather_object(sorted((k, v["momentum_buffer"].numpy().sum())
                                     for k, v in opt.state_dict()["state"].items()))
    assert all(s == st[0] for s in st), st


def main(argv):
    hvd.init()
    r, world = hvd.rank(), hvd.size()
    assert hvd.local_size() == world and hvd.local_rank() == r
    check_collectives(r, world)
    wants = np.load(argv[0])
    for run in argv[1:]:
        compression_name, passes = run.split(":")
        want = [wants[f"{run}/{i}"] for i in range(len([k for k in wants.files if k.startswith(run + "/")]))]
        check_optimizer(r, world, compression_name, int(passes), want)
