"""DDP on ``device="cuda"`` over the NCCL communicator (host CUDA stand-in, fake NCCL):
several small gradient buckets go through NCCL, and SGD with momentum tracks one CPU process
on the whole batch every step."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.comm import world
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.nn.parallel import DistributedDataParallel as DDP

from ._common import init_nccl_world


def net():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def batch(step, rank):  # 4 rows per rank: the mean of the ranks' means is the global mean
    g = np.random.default_rng(100 * step + rank)
    return g.standard_normal((4, 6)).astype(np.float32), g.standard_normal((4, 3)).astype(np.float32)


def main(argv):
    cuda_api, r, W = init_nccl_world()
    assert isinstance(world.get_world(), NCCLCommunicator), type(world.get_world())
    sf.manual_seed(7)
    ref = net()  # one process, CPU, the whole batch
    sf.manual_seed(7 + r)  # DDP broadcasts rank 0's weights
    model = DDP(net().to("cuda"), bucket_cap_mb=0.0002)  # ~200 bytes: several buckets
    opt = sf.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = sf.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        x, y = batch(step, r)
        loss = F.mse_loss(model(sf.tensor(x, device="cuda")), sf.tensor(y, device="cuda"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xs, ys = zip(*(batch(step, k) for k in range(W)))
        ref_loss = F.mse_loss(ref(sf.tensor(np.concatenate(xs))), sf.tensor(np.concatenate(ys)))
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        for p, q in zip(model.module.parameters(), ref.parameters()):
            assert p.device.type == "cuda"
            np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
    calls = cuda_api.calls
    assert calls >= 3 * 2, calls  # every step's buckets went through NCCL
