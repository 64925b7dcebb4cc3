"""GradScaler under DDP: an inf on one rank (injected after the all-reduce, so only that rank
has it) makes every rank skip that step and halve its scale (the found-inf flag is
all-reduced); checked against a single-process PyTorch GradScaler run on the same averaged
gradients, with the inf injected by hand."""

import numpy as np
import torch

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.nn.parallel import DistributedDataParallel as DDP

BAD = 1  # the step at which rank W-1 alone sees an inf


def batch(rank, step):
    g = np.random.default_rng(100 * step + rank)
    return g.standard_normal((4, 5)).astype(np.float32), g.standard_normal((4, 2)).astype(np.float32)


def main(argv):
    dist.init_process_group()
    r, world = dist.get_rank(), dist.get_world_size()
    sf.manual_seed(3)
    model = nn.Linear(5, 2)
    tmodel = torch.nn.Linear(5, 2)
    with torch.no_grad():
        tmodel.weight.copy_(torch.from_numpy(model.weight.numpy().copy()))
        tmodel.bias.copy_(torch.from_numpy(model.bias.numpy().copy()))
    ddp = DDP(model)
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    scaler = sf.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    for step in range(4):
        x, y = batch(r, step)
        opt.zero_grad()
        scaler.scale(F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y))).backward()
        if step == BAD and r == world - 1:
            model.weight.grad.array[0, 0] = np.inf  # after the all-reduce: only this rank has it
        before = model.weight.numpy().copy()
        scaler.step(opt)
        scaler.update()
        stepped = not np.array_equal(before, model.weight.numpy())
        assert stepped == (step != BAD), (r, step, stepped)
        # reference: one process, the mean of the per-rank losses, the inf injected by hand
        topt.zero_grad()
        tl = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(bx)), torch.from_numpy(by))
                 for bx, by in (batch(q, step) for q in range(world))) / world
        tscaler.scale(tl).backward()
        if step == BAD:
            tmodel.weight.grad[0, 0] = float("inf")
        tscaler.step(topt)
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale(), step
        scales = [None] * world
        dist.all_gather_object(scales, (scaler.get_scale(), scaler._get_growth_tracker()))
        assert len(set(scales)) == 1, scales
    # 2^10 -> backoff 2^9 at step 1 -> grown to 2^10 after 2 good steps
    assert scaler.get_scale() == 2.0**10
    for p, q in zip(model.parameters(), tmodel.parameters()):
        diff = np.abs(p.numpy() - q.detach().numpy()).max()
        assert np.allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6), diff
    ws = [None] * world
    dist.all_gather_object(ws, model.weight.numpy())
    assert all(np.array_equal(ws[0], w) for w in ws)
