"""Global tensors on a ``placement("cuda")`` (host CUDA stand-in, fake NCCL): every boxing
between B, P, S(0), S(1) and a blocks split, with gradients, keeps device shards and equals
the local computation; a column- then row-parallel pair of linears (tensor parallel) ends
Partial and equals the local MLP. Prints ``rank R: ok, N NCCL calls``."""

import numpy as np

import shardflow as sf
from shardflow.distributed import distribute_tensor, placement, sbp

from ...distributed.programs._common import spread
from ._common import close, init_nccl_world

S, B, P = sbp.split, sbp.broadcast, sbp.partial_sum


def main(argv):
    cuda_api, rank, _ = init_nccl_world()
    mesh = placement("cuda")
    full = np.random.default_rng(3).standard_normal((6, 8)).astype(np.float32)
    R = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    kinds = [B, P, S(0), S(1), sbp.split(1, blocks=2)]  # blocks: fused q/k/v-style splits
    for src in kinds:
        for dst in kinds:
            leaf = sf.tensor(full, device="cuda", requires_grad=True)
            x = spread(leaf, mesh, B).to_global(sbp=src)  # differentiable to leaf
            y = x.to_global(sbp=dst)
            assert y.to_local().device.type == "cuda", (src, dst, y.to_local().device)
            close(y.numpy(), full, f"{src}->{dst} value")
            (y * sf.tensor(R, device="cuda")).sum().backward()
            assert leaf.grad.device.type == "cuda"
            close(leaf.grad.cpu().numpy(), R, f"{src}->{dst} grad")
    # a column- then row-parallel pair of linears (tensor parallel) against the local computation
    g = np.random.default_rng(5)
    xs, w1, w2 = (g.standard_normal(s).astype(np.float32) for s in ((4, 6), (6, 8), (8, 3)))
    ref = np.tanh(xs @ w1) @ w2
    X = distribute_tensor(sf.tensor(xs, device="cuda"), mesh, B)
    W1 = distribute_tensor(sf.tensor(w1, device="cuda", requires_grad=True), mesh, S(1))
    W2 = distribute_tensor(sf.tensor(w2, device="cuda", requires_grad=True), mesh, S(0))
    out = (X @ W1).tanh() @ W2
    assert out.sbp == (P,), out.sbp
    close(out.to_global(sbp=B).numpy(), ref, "tensor-parallel MLP")
    calls = cuda_api.calls
    assert calls > 0
    print(f"rank {rank}: ok, {calls} NCCL calls", flush=True)
