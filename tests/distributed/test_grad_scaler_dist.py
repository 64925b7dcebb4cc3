"""GradScaler under DDP: an inf on one rank makes every rank skip that step and halve its
scale (the found-inf flag is all-reduced); checked against a single-process PyTorch
GradScaler run on the same averaged gradients. Plus the minimum-scale error.
"""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as snn
from shardflow.testing.mpi import run_mpi

SCRIPT = r"""
import numpy as np, torch
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()

def batch(rank, step):
    g = np.random.default_rng(100 * step + rank)
    return g.standard_normal((4, 5)).astype(np.float32), g.standard_normal((4, 2)).astype(np.float32)

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
BAD = 1  # the step at which rank W-1 alone sees an inf
for step in range(4):
    x, y = batch(r, step)
    opt.zero_grad()
    scaler.scale(F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y))).backward()
    if step == BAD and r == W - 1:
        model.weight.grad.array[0, 0] = np.inf  # after the all-reduce: only this rank has it
    before = model.weight.numpy().copy()
    scaler.step(opt)
    scaler.update()
    stepped = not np.array_equal(before, model.weight.numpy())
    assert stepped == (step != BAD), (r, step, stepped)
    # reference: one process, the mean of the per-rank losses, the inf injected by hand
    topt.zero_grad()
    tl = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(bx)), torch.from_numpy(by))
             for bx, by in (batch(q, step) for q in range(W))) / W
    tscaler.scale(tl).backward()
    if step == BAD:
        tmodel.weight.grad[0, 0] = float("inf")
    tscaler.step(topt)
    tscaler.update()
    assert scaler.get_scale() == tscaler.get_scale(), (step, scaler.get_scale(), tscaler.get_scale())
    scales = [None] * W
    dist.all_gather_object(scales, (scaler.get_scale(), scaler._get_growth_tracker()))
    assert len(set(scales)) == 1, scales
assert scaler.get_scale() == 2.0**10  # 2^10 -> backoff 2^9 at step 1 -> grown to 2^10 after 2 good steps
for p, q in zip(model.parameters(), tmodel.parameters()):
    assert np.allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6), np.abs(p.numpy() - q.detach().numpy()).max()
ws = [None] * W
dist.all_gather_object(ws, model.weight.numpy())
assert all(np.array_equal(ws[0], w) for w in ws)
print("ALL OK")
"""


@pytest.mark.mpi
def test_inf_on_one_rank_makes_every_rank_skip_and_back_off():
    res = run_mpi(SCRIPT, n=2, timeout=90).check()
    assert res.stdout.count("ALL OK") == 2, res.output


def _nan_step(scaler, model, opt):
    opt.zero_grad()
    loss = model(sf.ones(1, 2)).sum() * float("nan")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def test_min_scale_raises_before_changing_the_scale():
    model = snn.Linear(2, 1)
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    scaler = sf.amp.GradScaler("cpu", init_scale=4.0, min_scale=1.0)
    _nan_step(scaler, model, opt)  # 4 -> 2
    _nan_step(scaler, model, opt)  # 2 -> 1
    with pytest.raises(RuntimeError, match=r"below min_scale=1.*3 skipped steps in a row.*bfloat16"):
        _nan_step(scaler, model, opt)
    assert scaler.get_scale() == 1.0
    # without a floor: PyTorch's behaviour, the scale keeps halving
    free = sf.amp.GradScaler("cpu", init_scale=1.0, min_scale=None)
    ref = torch.amp.GradScaler("cpu", init_scale=1.0)
    tmodel = torch.nn.Linear(2, 1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    for _ in range(3):
        _nan_step(free, model, opt)
        topt.zero_grad()
        ref.scale(tmodel(torch.ones(1, 2)).sum() * float("nan")).backward()
        ref.step(topt)
        ref.update()
    assert free.get_scale() == ref.get_scale() == 0.125


def test_defaults_are_torchs():
    s, t = sf.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    assert s.get_scale() == t.get_scale() == 2.0**16
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (
        t.get_growth_factor(), t.get_backoff_factor(), t.get_growth_interval()) == (2.0, 0.5, 2000)
    assert np.isclose(2.0**-24, np.finfo(np.float16).smallest_subnormal)
