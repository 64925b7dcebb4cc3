"""Two pipeline stages on ``device="cuda"`` (host CUDA stand-in): 1F1B and GPipe send the
device activations and gradients over the NCCL communicator (only the small shape headers
travel over MPI); output and every gradient equal one CPU process, and every micro-batch's
activation and gradient went through NCCL."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.comm import world
from shardflow.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

from ._common import init_nccl_world


def mlp():
    sf.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def main(argv):
    cuda_api, r, W = init_nccl_world()
    ref = mlp()
    model = mlp()
    model.to("cuda")
    mods = list(model)
    part = nn.Sequential(*(mods[:2] if r == 0 else mods[2:]))
    g = np.random.default_rng(0)
    x, y = g.standard_normal((8, 6)).astype(np.float32), g.standard_normal((8, 3)).astype(np.float32)
    F.mse_loss(ref(sf.tensor(x)), sf.tensor(y)).backward()
    for Sched in (Schedule1F1B, ScheduleGPipe):
        for p in part.parameters():
            p.grad = None
        stage = PipelineStage(part, r, W, group=world.get_world())
        sched = Sched(stage, 4, loss_fn=F.mse_loss)
        if r == 0:
            assert sched.step(sf.tensor(x, device="cuda")) is None
        else:
            out = sched.step(target=sf.tensor(y, device="cuda"))
            assert out.device.type == "cuda"
            np.testing.assert_allclose(out.detach().cpu().numpy(),
                                       ref(sf.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
        refs = list(ref.parameters())[:2] if r == 0 else list(ref.parameters())[2:]
        for p, q in zip(part.parameters(), refs):
            assert p.grad.device.type == "cuda", Sched
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    calls = cuda_api.calls
    # every micro-batch's activation and gradient went through NCCL: 16 messages, in groups
    # (one per timeline step, counted once by the fake) of at most a send and a receive
    assert calls >= 2 * 4, calls
