"""torch.distributed's functional collectives on cuda tensors (host CUDA stand-in, fake NCCL):
results stay on the device and equal the NumPy expectation (every rank's input is
``base * (rank + 1)``); a global cuda tensor as a whole (``full_tensor``, differentiable, and
``.numpy()``) for every sbp; a module laid out in place keeps device shards and
``full_state_dict`` gathers them; optimizer state loaded whole is cut back to this rank's
shard on the device (a blocks split: an index array taken on the device)."""

import warnings

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.distributed import layout, placement, sbp
from shardflow.distributed.full_state import full_state_dict, shard_optimizer_state

from ...distributed.programs._common import spread
from ._common import close, init_nccl_world, on_cuda

S, B, P = sbp.split, sbp.broadcast, sbp.partial_sum


def dev(a):
    return sf.tensor(np.ascontiguousarray(a), device="cuda")


def host(t, what):
    on_cuda(t, what)
    return t.cpu().numpy()


def check_collectives(cuda_api, rank, world):
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    mine = base * (rank + 1)
    scale = sum(r + 1 for r in range(world))
    calls0 = cuda_api.calls
    t = dev(mine)
    dist.all_reduce(t)
    close(host(t, "all_reduce"), base * scale, "all_reduce sum")
    t = dev(mine)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    close(host(t, "all_reduce max"), base * world, "all_reduce max")
    t = dev(mine)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    close(host(t, "async all_reduce"), base * scale, "async all_reduce")
    t = dev(mine)
    dist.broadcast(t, src=world - 1)
    close(host(t, "broadcast"), base * world, "broadcast")
    outs = [dev(np.zeros_like(base)) for _ in range(world)]
    dist.all_gather(outs, dev(mine))
    for r, o in enumerate(outs):
        close(host(o, "all_gather"), base * (r + 1), f"all_gather row {r}")
    out = dev(np.zeros((world * 4, 3), np.float32))
    dist.all_gather_into_tensor(out, dev(mine))
    close(host(out, "all_gather_into_tensor"),
          np.concatenate([base * (r + 1) for r in range(world)]), "all_gather_into_tensor")
    full = np.arange(world * 6, dtype=np.float32).reshape(world * 2, 3)
    out = dev(np.zeros((2, 3), np.float32))
    dist.reduce_scatter_tensor(out, dev(full * (rank + 1)))
    close(host(out, "reduce_scatter_tensor"), full[2 * rank:2 * rank + 2] * scale,
          "reduce_scatter_tensor")
    out = dev(np.zeros(3, np.float32))
    dist.reduce_scatter(out, [dev(np.full(3, (rank + 1) * (j + 1), np.float32)) for j in range(world)])
    close(host(out, "reduce_scatter"), np.full(3, scale * (rank + 1)), "reduce_scatter")
    inp = np.arange(world * 2, dtype=np.float32) + 100 * rank
    out = dev(np.zeros(world * 2, np.float32))
    dist.all_to_all_single(out, dev(inp))
    close(host(out, "all_to_all_single"),
          np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(world)]),
          "all_to_all_single")
    if rank == 0:
        dist.send(dev(base * 7), dst=1)
    elif rank == 1:
        t = dev(np.zeros_like(base))
        dist.recv(t, src=0)
        close(host(t, "recv"), base * 7, "send/recv")
    assert cuda_api.calls > calls0


def check_whole_tensors():
    # a global cuda tensor as a whole: full_tensor (differentiable, on the device) and .numpy()
    mesh = placement("cuda")
    g = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    for s in (B, P, S(0), S(1)):
        leaf = sf.tensor(g, device="cuda", requires_grad=True)
        x = spread(leaf, mesh, B).to_global(sbp=s)  # differentiable to leaf
        assert isinstance(x.numpy(), np.ndarray)
        close(x.numpy(), g, f"{s} numpy")
        f = x.full_tensor()
        assert not f.is_global
        close(host(f, "full_tensor"), g, f"{s} full_tensor")
        (f * 3).sum().backward()
        close(host(leaf.grad, "full_tensor grad"), np.full_like(g, 3), f"{s} full_tensor grad")
    # a module parameter laid out in place keeps a device shard; full_state_dict gathers it
    # unseeded: default seeds differ per process, so each rank draws another init; to_global
    # broadcasts rank 0's whole value first (PyTorch's src_data_rank=0)
    lin = nn.Linear(4, 6).to("cuda")
    mine = lin.weight.cpu().numpy()
    w_t = lin.weight.detach().clone()
    dist.broadcast(w_t, 0)
    w = w_t.cpu().numpy()  # rank 0's value, on every rank
    assert dist.get_rank() == 0 or not np.allclose(mine, w), "unseeded inits should differ"
    lin.to_global(mesh, S(0))
    on_cuda(lin.weight.to_local(), "module.to_global")
    close(lin.weight.numpy(), w, "module.to_global")
    sd = full_state_dict(lin)
    on_cuda(sd["weight"], "full_state_dict")
    close(sd["weight"].cpu().numpy(), w, "full_state_dict")
    # optimizer state loaded whole is cut back to this rank's shard, on the device (blocks
    # split: an index array taken on the device)
    lin2 = nn.Linear(4, 6).to("cuda")
    w2_t = lin2.weight.detach().clone()
    dist.broadcast(w2_t, 0)
    w2 = w2_t.cpu().numpy()
    lin2.to_global(mesh, sbp.split(0, blocks=2))
    opt = sf.optim.Adam(lin2.parameters(), lr=0.1)
    whole = np.arange(24, dtype=np.float32).reshape(6, 4)
    opt.state[lin2.weight] = {"exp_avg": sf.tensor(whole, device="cuda")}
    shard_optimizer_state(opt)
    st = opt.state[lin2.weight]["exp_avg"]  # laid out like its parameter (issue 27)
    assert st.is_global and st.sbp == lin2.weight.sbp and tuple(st.shape) == (6, 4)
    idx = layout.local_index((6, 4), mesh.shape, mesh.coordinate, lin2.weight.sbp)
    close(host(st.to_local(), "shard_optimizer_state"), layout.take(whole, idx), "shard_optimizer_state")
    close(lin2.weight.numpy(), w2, "blocks split parameter")


def main(argv):
    warnings.simplefilter("ignore")
    cuda_api, rank, world = init_nccl_world()
    check_collectives(cuda_api, rank, world)
    check_whole_tensors()
