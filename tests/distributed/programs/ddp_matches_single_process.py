"""DistributedDataParallel / SyncBatchNorm on real ranks against a single-process PyTorch
reference, one check per ``argv`` entry (in that order, each with fresh models):

* ``plain``, ``view`` (``gradient_as_bucket_view``), ``no_sync`` (a local backward inside
  ``no_sync()``, then a synchronised one): several small buckets, rank 0's weights broadcast
  at wrap, every gradient and the parameters after SGD steps equal to PyTorch's;
* ``syncbn``: SyncBatchNorm under DDP against BatchNorm on the full batch (running stats too);
* ``unused``: ``find_unused_parameters=True`` with a branch used on even steps only, and
  PyTorch's error on the next forward without it (leaves that DDP unfinished: put it last).

Every rank can rebuild every rank's batch from its seed, so each rank computes the reference
itself: DDP averages the per-rank gradients with equal weight, so the reference loss is
``sum_r mean_loss(batch_r) / world``. Batches are uneven (rank r has 3 + 2r rows) except for
SyncBatchNorm, whose reference is BatchNorm on the full batch.
"""

import numpy as np
import torch

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.nn.parallel import DistributedDataParallel as DDP
from shardflow.nn.parallel import SyncBatchNorm


def batch(rank, step, rows=None, din=6, dout=3):
    g = np.random.default_rng(10_000 + 100 * step + rank)
    n = rows if rows is not None else 3 + 2 * rank
    return (g.standard_normal((n, din)).astype(np.float32),
            g.standard_normal((n, dout)).astype(np.float32))


def to_torch(model, tmodel):
    with torch.no_grad():
        for p, q in zip(model.parameters(), tmodel.parameters()):
            q.copy_(torch.from_numpy(p.numpy().copy()))


def check_params(model, tmodel, what, tol=2e-5):
    for (name, p), q in zip(model.named_parameters(), tmodel.parameters()):
        a, b = p.numpy(), q.detach().numpy()
        assert np.allclose(a, b, rtol=tol, atol=tol), (what, name, np.abs(a - b).max())


def sgd(model, lr):
    for p in model.parameters():
        if p.grad is not None:
            p.array -= lr * p.grad.array


def tsgd(tmodel, lr):
    with torch.no_grad():
        for q in tmodel.parameters():
            if q.grad is not None:
                q -= lr * q.grad


def torch_mean_loss(tmodel, world, steps, *extra):
    """sum over ranks and steps of mse(rank's batch) / world (DDP's equal-weight average)."""
    loss = 0
    for k in range(world):
        for s in steps:
            xk, yk = batch(k, s)
            out = tmodel(torch.from_numpy(xk), *extra)
            loss = loss + torch.nn.functional.mse_loss(out, torch.from_numpy(yk)) / world
    return loss


def check_variant(variant, r, world):
    sf.manual_seed(1 + r)  # different init per rank: DDP must broadcast rank 0's
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))
    tmodel = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8),
                                 torch.nn.Tanh(), torch.nn.Linear(8, 3))
    kw = dict(bucket_cap_mb=0.0004)  # ~400 bytes: several buckets
    if variant == "view":
        kw["gradient_as_bucket_view"] = True
    ddp = DDP(model, **kw)
    assert len(ddp.bucket_sizes()) >= 3, ddp.bucket_sizes()
    objs = [None] * world
    dist.all_gather_object(objs, [p.numpy().copy() for p in model.parameters()])
    for other in objs:
        for a, b in zip(other, objs[0]):
            assert np.array_equal(a, b)  # broadcast at wrap
    to_torch(model, tmodel)
    lr = 0.1
    for step in range(4):
        tmodel.zero_grad()
        if variant == "no_sync":
            x1, y1 = batch(r, 2 * step)
            with ddp.no_sync():
                F.mse_loss(ddp(sf.tensor(x1)), sf.tensor(y1)).backward()
            # local gradient only: must differ from the averaged one later
            x2, y2 = batch(r, 2 * step + 1)
            F.mse_loss(ddp(sf.tensor(x2)), sf.tensor(y2)).backward()
            torch_mean_loss(tmodel, world, (2 * step, 2 * step + 1)).backward()
        else:
            x, y = batch(r, step)
            F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
            torch_mean_loss(tmodel, world, (step,)).backward()
        for p, q in zip(model.parameters(), tmodel.parameters()):
            diff = np.abs(p.grad.numpy() - q.grad.numpy()).max()
            assert np.allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-5, atol=2e-6), (variant, step, diff)
        sgd(model, lr)
        tsgd(tmodel, lr)
        ddp.zero_grad(set_to_none=(variant != "view"))
    check_params(model, tmodel, variant)
    assert ddp.stats["backward_waits"] == 4, ddp.stats


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)
        self.b = nn.Linear(6, 3)  # used only on even steps

    def forward(self, x, use_b):
        out = self.a(x)
        return out + self.b(x) if use_b else out


class TBranchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 3)
        self.b = torch.nn.Linear(6, 3)

    def forward(self, x, use_b):
        out = self.a(x)
        return out + self.b(x) if use_b else out


def check_unused(r, world):
    model, tmodel = Branchy(), TBranchy()
    ddp = DDP(model, find_unused_parameters=True, bucket_cap_mb=0.0001)
    to_torch(model, tmodel)
    for step in range(4):
        use_b = step % 2 == 0
        x, y = batch(r, step)
        F.mse_loss(ddp(sf.tensor(x), use_b), sf.tensor(y)).backward()
        tmodel.zero_grad()
        torch_mean_loss(tmodel, world, (step,), use_b).backward()
        sgd(model, 0.1)
        tsgd(tmodel, 0.1)
        ddp.zero_grad()
    check_params(model, tmodel, "unused")
    # without find_unused_parameters the next forward must raise PyTorch's error
    ddp2 = DDP(Branchy())
    x, y = batch(r, 0)
    F.mse_loss(ddp2(sf.tensor(x), False), sf.tensor(y)).backward()
    try:
        ddp2(sf.tensor(x), False)
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e), str(e)
    else:
        raise AssertionError("expected the unfinished-reduction error")


def check_sync_batchnorm(r, world):
    model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 3))
    model = SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(model[1], SyncBatchNorm)
    tmodel = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.Tanh(),
                                 torch.nn.Linear(5, 3))
    ddp = DDP(model)
    to_torch(model, tmodel)
    for step in range(3):
        x, y = batch(r, step, rows=4)
        F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
        xs = np.concatenate([batch(k, step, rows=4)[0] for k in range(world)])
        ys = np.concatenate([batch(k, step, rows=4)[1] for k in range(world)])
        tmodel.zero_grad()
        torch.nn.functional.mse_loss(tmodel(torch.from_numpy(xs)), torch.from_numpy(ys)).backward()
        sgd(model, 0.1)
        tsgd(tmodel, 0.1)
        ddp.zero_grad()
    check_params(model, tmodel, "syncbn", 5e-5)
    assert np.allclose(model[1].running_mean.numpy(), tmodel[1].running_mean.numpy(), atol=1e-5)
    assert np.allclose(model[1].running_var.numpy(), tmodel[1].running_var.numpy(), atol=1e-5)


def main(argv):
    dist.init_process_group()
    r, world = dist.get_rank(), dist.get_world_size()
    torch.set_default_dtype(torch.float32)
    for variant in argv:
        if variant == "unused":
            check_unused(r, world)
        elif variant == "syncbn":
            check_sync_batchnorm(r, world)
        else:
            assert variant in ("plain", "view", "no_sync"), variant
            check_variant(variant, r, world)
