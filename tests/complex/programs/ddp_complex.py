"""Complex tensors on real ranks (``tests/complex/test_ddp_complex.py``), against torch
computed on each rank from every rank's seed:

* collectives: ``all_reduce`` (SUM, AVG) of complex tensors sums real and imaginary parts (torch
  views them as real), MAX/MIN/PRODUCT refuse them with torch's ``ValueError``;
  ``all_reduce_coalesced``, ``broadcast``, ``all_gather``, ``reduce`` carry both parts;
* DDP: a model of complex parameters (complex ``nn.Linear``, a complex weight through
  ``rfft``/``irfft``) trained for a few steps with SGD (momentum, nesterov, weight decay) and
  Adam(amsgrad) on uneven per-rank batches equals one torch process on the mean loss.
"""

import numpy as np
import torch

import shardflow as sf
import shardflow.distributed as dist
from shardflow.nn.parallel import DistributedDataParallel as DDP


def cplx(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def check_collectives(r, world):
    vals = [cplx(np.random.default_rng(k), 3, 2) for k in range(world)]
    t = sf.tensor(vals[r])
    dist.all_reduce(t)
    np.testing.assert_allclose(t.numpy(), sum(vals), rtol=1e-6)
    t = sf.tensor(vals[r])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    np.testing.assert_allclose(t.numpy(), sum(vals) / world, rtol=1e-6)
    for name in ("MAX", "MIN", "PRODUCT"):
        t = sf.tensor(vals[r])
        try:
            dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
        except ValueError as e:
            assert str(e) == f"all_reduce does not support RedOpType.{name} on complex tensors", str(e)
        else:
            raise AssertionError(f"all_reduce({name}) of a complex tensor must raise")
        np.testing.assert_array_equal(t.numpy(), vals[r])  # refused before any communication
    a, b = sf.tensor(vals[r]), sf.tensor(vals[r].real.copy())
    dist.all_reduce_coalesced([a, b])
    np.testing.assert_allclose(a.numpy(), sum(vals), rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), sum(vals).real, rtol=1e-6)
    t = sf.tensor(vals[r])
    dist.broadcast(t, src=1)
    np.testing.assert_array_equal(t.numpy(), vals[1])
    outs = [sf.zeros(3, 2, dtype=sf.cfloat) for _ in range(world)]
    dist.all_gather(outs, sf.tensor(vals[r]))
    for k in range(world):
        np.testing.assert_array_equal(outs[k].numpy(), vals[k])
    t = sf.tensor(vals[r])
    dist.reduce(t, dst=0)
    if r == 0:
        np.testing.assert_allclose(t.numpy(), sum(vals), rtol=1e-6)


def build(lib):
    class Spectral(lib.nn.Module):
        """A complex linear layer, then a complex weight on the rfft modes of the result."""

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(4, 6, dtype=lib.cfloat)
            self.w = lib.nn.Parameter(0.5 * lib.ones(3, dtype=lib.cfloat))

        def forward(self, x):
            h = self.lin(x).abs()  # (N, 6) real
            return lib.fft.irfft(lib.fft.rfft(h)[:, :3] * self.w, n=6)  # (N, 6)

    return Spectral()


def batch(rank, step):
    rng = np.random.default_rng(1000 * step + rank)
    n = 2 + rank
    return cplx(rng, n, 4), rng.standard_normal((n, 6)).astype(np.float32)


def check_ddp(r, world, optname, kw):
    sf.manual_seed(7 + r)  # different init per rank: DDP broadcasts rank 0's
    model = build(sf)
    ddp = DDP(model, bucket_cap_mb=0.00005)  # several buckets
    tmodel = build(torch)
    with torch.no_grad():
        for p, q in zip(model.parameters(), tmodel.parameters()):
            q.copy_(torch.from_numpy(p.numpy().copy()))
    opt = getattr(sf.optim, optname)(ddp.parameters(), **kw)
    topt = getattr(torch.optim, optname)(tmodel.parameters(), **kw)
    for step in range(3):
        x, y = batch(r, step)
        opt.zero_grad()
        ((ddp(sf.tensor(x)) - sf.tensor(y)) ** 2).mean().backward()
        opt.step()
        topt.zero_grad()
        loss = 0
        for k in range(world):  # DDP averages the ranks' gradients with equal weight
            xk, yk = batch(k, step)
            loss = loss + ((tmodel(torch.from_numpy(xk)) - torch.from_numpy(yk)) ** 2).mean() / world
        loss.backward()
        topt.step()
        for (name, p), q in zip(model.named_parameters(), tmodel.parameters()):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{optname} step {step} {name}")


def main(argv):
    dist.init_process_group()
    r, world = dist.get_rank(), dist.get_world_size()
    check_collectives(r, world)
    check_ddp(r, world, "SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01))
    check_ddp(r, world, "Adam", dict(lr=0.01, amsgrad=True))
