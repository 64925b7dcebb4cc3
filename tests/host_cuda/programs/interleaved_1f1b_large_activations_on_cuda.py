"""Interleaved 1F1B (2 stages per rank) on ``device="cuda"`` (host CUDA stand-in) with
activations above MPI's eager limit (16 kB), so the fake NCCL's send waits for its receive as
NCCL's may: each timeline step's sends and receives must be one NCCL group (no deadlock);
outputs and gradients equal one CPU process."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.comm import world
from shardflow.distributed.pipelining import PipelineStage, ScheduleInterleaved1F1B

from ._common import init_nccl_world

H = 1024  # 4 rows x 1024 float32 = 16 kB per activation: above MPI's eager limit


def build():
    sf.manual_seed(5)
    return [nn.Linear(8, H), nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 3)]


class Block(nn.Module):
    def __init__(self, lin, last):
        super().__init__()
        self.lin, self.last = lin, last

    def forward(self, t):
        return self.lin(t) if self.last else self.lin(t).tanh()


def main(argv):
    cuda_api, r, W = init_nccl_world()
    ref = build()
    g = np.random.default_rng(1)
    x, y = g.standard_normal((16, 8)).astype(np.float32), g.standard_normal((16, 3)).astype(np.float32)
    h = sf.tensor(x)
    for mod in ref:
        h = mod(h).tanh() if mod is not ref[-1] else mod(h)
    F.mse_loss(h, sf.tensor(y)).backward()
    mods = [Block(m, i == 3).to("cuda") for i, m in enumerate(build())]
    mine = [k * W + r for k in range(2)]
    stages = [PipelineStage(mods[s], s, 2 * W, group=world.get_world()) for s in mine]
    sched = ScheduleInterleaved1F1B(stages, 4, loss_fn=F.mse_loss)
    if r == 0:
        assert sched.step(sf.tensor(x, device="cuda")) is None
    else:
        out = sched.step(target=sf.tensor(y, device="cuda"))
        assert out.device.type == "cuda"
        np.testing.assert_allclose(out.detach().cpu().numpy(), h.detach().numpy(), rtol=1e-4, atol=1e-5)
    for s in mine:
        for p, q in zip(mods[s].parameters(), ref[s].parameters()):
            assert p.grad.device.type == "cuda"
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    calls = cuda_api.calls
    assert calls >= 3 * 4, calls  # 3 boundaries x 4 micro-batches each way, grouped per step
