"""GradScaler under DDP: an inf on one rank (injected after the all-reduce, so only that rank
has it) makes every rank skip that step and halve its scale (the found-inf flag is
all-reduced); checked against a single-process PyTorch GradScaler run on the same averaged
gradients, with the inf injected by hand. That reference is computed by the test in its own
process (``torch_reference`` in tests/distributed/test_grad_scaler_dist.py: the ranks do not
import PyTorch); ``argv[0]``: the ``.npz`` of its scale after each step and final parameters."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.nn.parallel import DistributedDataParallel as DDP

BAD = 1  # the step at which rank W-1 alone sees an inf
STEPS = 4


def batch(rank, step):
    g = np.random.default_rng(100 * step + rank)
    return g.standard_normal((4, 5)).astype(np.float32), g.standard_normal((4, 2)).astype(np.float32)


def main(argv):
    want = np.load(argv[0])
    dist.init_process_group()
    r, world = dist.get_rank(), dist.get_world_size()
    assert world == int(want["world"]), (world, want["world"])
    sf.manual_seed(3)
    model = nn.Linear(5, 2)
    ddp = DDP(model)
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    scaler = sf.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    for step in range(STEPS):
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
        assert scaler.get_scale() == want["scales"][step], (step, scaler.get_scale(), want["scales"][step])
        scales = [None] * world
        dist.all_gather_object(scales, (scaler.get_scale(), scaler._get_growth_tracker()))
        assert len(set(scales)) == 1, scales
    # 2^10 -> backoff 2^9 at step 1 -> grown to 2^10 after 2 good steps
    assert scaler.get_scale() == 2.0**10
    for p, name in zip(model.parameters(), ("weight", "bias")):
        q = want[name]
        diff = np.abs(p.numpy() - q).max()
        assert np.allclose(p.numpy(), q, rtol=1e-5, atol=1e-6), diff
    ws = [None] * world
    dist.all_gather_object(ws, model.weight.numpy())
    assert all(np.array_equal(ws[0], w) for w in ws)
