"""SyncBatchNorm on ``device="cuda"`` over the NCCL communicator (host CUDA stand-in): output,
input gradient and running statistics equal BatchNorm2d on the global batch, on the device,
with the statistics exchanged through NCCL."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn

from ._common import init_nccl_world


def main(argv):
    cuda_api, r, W = init_nccl_world()
    g = np.random.default_rng(0)
    full = g.standard_normal((2 * W, 3, 4, 4)).astype(np.float32)  # the global batch
    up = g.standard_normal(full.shape).astype(np.float32)
    ref = nn.BatchNorm2d(3)
    xr = sf.tensor(full, requires_grad=True)
    yr = ref(xr)
    (yr * sf.tensor(up)).sum().backward()
    bn = nn.SyncBatchNorm(3).to("cuda")
    x = sf.tensor(full[2 * r:2 * r + 2], device="cuda", requires_grad=True)
    y = bn(x)
    (y * sf.tensor(up[2 * r:2 * r + 2], device="cuda")).sum().backward()

    def ok(a, b):
        return np.allclose(a, b, rtol=1e-4, atol=1e-5)

    assert y.device.type == "cuda" and x.grad.device.type == "cuda"
    assert ok(y.detach().cpu().numpy(), yr.detach().numpy()[2 * r:2 * r + 2]), "output"
    assert ok(x.grad.cpu().numpy(), xr.grad.numpy()[2 * r:2 * r + 2]), "input gradient"
    assert ok(bn.running_mean.cpu().numpy(), ref.running_mean.numpy()), "running mean"
    assert ok(bn.running_var.cpu().numpy(), ref.running_var.numpy()), "running var"
    assert cuda_api.calls >= 2
