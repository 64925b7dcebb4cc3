"""On ``device="cuda"`` over the NCCL communicator (host CUDA stand-in), against one CPU
process: Mirrored and CentralStorage strategies (gradients and loss reduced through NCCL, the
reduced loss on the device; ``reduce`` and a distributed dataset of cuda tensors), then
``shardflow.parallelize`` of GPT-mini with dp=2, with ZeRO-1 (its full state dict gathered on
the device) and over global tensors."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.distributed.strategies import (
    CentralStorageStrategy,
    MirroredStrategy,
    OneDeviceStrategy,
)
from shardflow.models import GPT, GPTConfig
from shardflow.models.gpt_pipeline import gpt_loss

from ._common import init_nccl_world

G = 8  # global batch
GPT_CFG = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)


def batches():
    for t in range(3):
        g = np.random.default_rng(t)
        yield (g.standard_normal((G, 4)).astype(np.float32), g.standard_normal((G, 2)).astype(np.float32))


def train(strategy, dev, r):
    with strategy.scope():
        sf.manual_seed(1 + (r if dev == "cuda" else 0))  # broadcast_parameters: rank 0's
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(dev)
        opt = sf.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    strategy.broadcast_parameters(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x.to(dev)), y.to(dev), reduction="sum") / (G * 2)
        loss.backward()
        return loss

    total = []
    for x, y in strategy.experimental_distribute_dataset(batches()):
        loss = strategy.run(step, args=(x, y))
        strategy.apply_gradients(opt, model.parameters())
        red = strategy.reduce("SUM", loss, axis=None)
        assert red.device.type == dev, red.device  # reduced where the value lives
        total.append(red.item())
    return [p.detach().cpu().numpy() for p in model.parameters()], total


def check_strategies(cuda_api, r):
    ref, ref_loss = train(OneDeviceStrategy(), "cpu", r)
    for cls in (MirroredStrategy, CentralStorageStrategy):
        before = cuda_api.calls
        params, losses = train(cls(), "cuda", r)
        assert cuda_api.calls - before >= 3 * 4, cls  # gradients + loss per step
        for a, b in zip(params, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=cls.__name__)
        np.testing.assert_allclose(losses, ref_loss, rtol=1e-5, atol=1e-7)
    s = MirroredStrategy()
    v = sf.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32) * (r + 1), device="cuda")
    np.testing.assert_allclose(s.reduce("SUM", v).cpu().numpy(), [[3, 6], [9, 12]])
    np.testing.assert_allclose(s.reduce("MEAN", v, axis=0).cpu().numpy(), [3, 4.5])
    dv = next(iter(s.experimental_distribute_dataset([sf.tensor(np.arange(8.0), device="cuda")])))
    assert dv.device.type == "cuda"
    np.testing.assert_allclose(dv.cpu().numpy(), np.arange(8.0)[4 * r:4 * r + 4])


def gpt_data(step, dev):
    g = np.random.default_rng(50 + step)
    idx = g.integers(0, 11, size=(8, 8))
    return sf.tensor(idx, device=dev), sf.tensor(np.roll(idx, -1, axis=1), device=dev)


def build_gpt(dev):
    sf.manual_seed(0)
    m = GPT(GPT_CFG).to(dev)
    return m, sf.optim.AdamW(m.parameters(), lr=0.01)


def check_parallelize():
    # dp=2 with ZeRO-1 and dp=2 over global tensors, GPT on cuda vs one CPU process
    ref, opt = build_gpt("cpu")
    ref_losses = []
    for step in range(3):
        opt.zero_grad()
        _, loss = ref(*gpt_data(step, "cpu"))
        loss.backward()
        opt.step()
        ref_losses.append(loss.item())
    for zero in (1, 0):
        model, opt = build_gpt("cuda")
        par = sf.parallelize(model, opt, dp=2, zero=zero, batch_size=8, print_plan=False,
                             loss_fn=lambda out, y: gpt_loss(out[0], y))
        losses = [par.step(*gpt_data(step, "cuda")) for step in range(3)]
        np.testing.assert_allclose(losses, ref_losses, rtol=0, atol=1e-5, err_msg=f"zero={zero}")
        if zero:  # (dp over global tensors: full_state_dict needs full_state.py on device arrays)
            full = par.full_state_dict()
            for k, v in ref.state_dict().items():
                assert full[k].device.type == "cuda", k
                np.testing.assert_allclose(full[k].cpu().numpy(), v.numpy(), rtol=0, atol=2e-5,
                                           err_msg=k)


def main(argv):
    cuda_api, r, _ = init_nccl_world()
    check_strategies(cuda_api, r)
    check_parallelize()
