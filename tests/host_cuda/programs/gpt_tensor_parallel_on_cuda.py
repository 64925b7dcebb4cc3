"""GPT-mini, tensor parallel (Megatron, vocabulary-parallel embedding and cross-entropy) on a
cuda model (host CUDA stand-in, fake NCCL) against one CPU process, with AdamW steps: the
loss on the device each step, the parameters after 3 steps. A 1-D mesh: the fake NCCL serves
world-sized communicators only (a dp x tp mesh needs groups)."""

import warnings

import numpy as np

import shardflow as sf
from shardflow.distributed import placement, sbp
from shardflow.distributed.tensor_parallel import parallelize_module
from shardflow.models.gpt import GPT, GPTConfig

from ._common import init_nccl_world, on_cuda


def main(argv):
    warnings.simplefilter("ignore")
    init_nccl_world()
    cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)
    sf.manual_seed(0)
    ref = GPT(cfg)
    sf.manual_seed(0)
    m = GPT(cfg).to("cuda")
    data = np.random.default_rng(0).integers(0, 32, size=(3, 4, 9))
    mesh = placement("cuda")
    parallelize_module(m, mesh, m.tensor_parallel_plan(vocab_parallel=True))
    m.to_global(mesh, sbp.broadcast)
    opt_ref, opt = ref.configure_optimizers(0.1, 1e-2), m.configure_optimizers(0.1, 1e-2)
    for step in range(3):
        batch = data[step]
        x, y = np.ascontiguousarray(batch[:, :-1]), np.ascontiguousarray(batch[:, 1:])
        _, lref = ref(sf.tensor(x), sf.tensor(y))
        opt_ref.zero_grad()
        lref.backward()
        gx, gy = (sf.tensor(a, device="cuda").to_global(mesh, sbp.broadcast) for a in (x, y))
        opt.zero_grad()
        _, loss = m(gx, gy)
        loss.backward()
        on_cuda(loss.to_local(), "loss")
        assert abs(loss.item() - lref.item()) < 1e-5, (step, loss.item(), lref.item())
        opt_ref.step()
        opt.step()
    for (name, a), (_, b) in zip(m.named_parameters(), ref.named_parameters()):
        on_cuda(a.to_local(), name)
        assert np.abs(a.numpy() - b.numpy()).max() < 1e-3, name
