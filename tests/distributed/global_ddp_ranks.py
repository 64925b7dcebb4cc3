"""Rank program of ``test_reducer.py``: global-tensor data parallelism through the reducer.

``python global_ddp_ranks.py gpt``: GPT-mini on a (world, 1) mesh three ways, each against one
process (loss and every gradient for three SGD steps): laid out bare with ``to_global`` (no
reducer), by ``data_tensor_parallel(dp=world)`` (its own reducer), and by
``data_tensor_parallel`` then wrapped in ``DistributedDataParallel(device_mesh=mesh["dp"])``
(DDP's reducer takes over). ``comm_plan()`` counts the backward all-reduces on the
data-parallel mesh dimension: the bare twin all-reduces every parameter at every use; the
other two once per bucket of their reducer.

``python global_ddp_ranks.py mlp``: a small model with a parameter used twice, once with the
split batch (a partial gradient) and once on its own (``shift.exp()``: a whole gradient that
must be counted once, not once per rank), under DDP on a global placement, against one
process.
"""

import sys
import warnings
from collections import Counter

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow import comm
from shardflow.distributed import comm_plan, placement, sbp
from shardflow.nn.parallel import DistributedDataParallel as DDP

r, W = comm.get_world().rank, comm.get_world().size
warnings.simplefilter("error")  # no op may fall back to gather -> compute -> re-shard


def dp_backward_all_reduces(plan) -> Counter:
    return Counter(e.op for e in plan.entries
                   if e.phase == "backward" and e.mesh_dim == 0 and e.collective == "all_reduce")


def check_grads(model, ref, what):
    for (name, a), (_, b) in zip(model.named_parameters(), ref.named_parameters()):
        err = np.abs(a.grad.numpy() - b.grad.numpy()).max()
        assert err < 1e-5, (what, name, err)


def sgd(*models):
    for m in models:
        for p in m.parameters():
            p.array -= 0.1 * p.grad.array


def gpt():
    from shardflow.distributed.placement import init_device_mesh
    from shardflow.distributed.tensor_parallel import data_tensor_parallel
    from shardflow.models.gpt import GPT, GPTConfig

    cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)
    sf.manual_seed(0)
    ref, bare, auto, wrapped = GPT(cfg), GPT(cfg), GPT(cfg), GPT(cfg)
    for m in (bare, auto, wrapped):
        m.load_state_dict(ref.state_dict())
    mesh = init_device_mesh("cpu", (W, 1), mesh_dim_names=("dp", "tp"))
    bare.to_global(mesh, (sbp.broadcast, sbp.broadcast))
    _, data_sbp = data_tensor_parallel(auto, W, 1)
    auto_buckets = len(auto._dp_reducer.buckets)
    data_tensor_parallel(wrapped, W, 1)
    ddp = DDP(wrapped, device_mesh=mesh["dp"], bucket_cap_mb=0.01)
    n_buckets, n_params = len(ddp.bucket_sizes()), len(list(wrapped.parameters()))
    assert 1 < n_buckets < n_params and auto_buckets < n_buckets, (n_buckets, auto_buckets, n_params)
    assert not comm.data_parallel_active()  # the global batch is laid out by its sbp
    data = np.random.default_rng(0).integers(0, 32, size=(3, 4, 9))
    for step in range(3):
        batch = sf.tensor(data[step])
        x, y = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()
        _, lref = ref(x, y)
        lref.backward()
        gx = x.to_global(mesh, [sbp.broadcast] * 2).to_global(sbp=data_sbp)
        gy = y.to_global(mesh, [sbp.broadcast] * 2).to_global(sbp=data_sbp)
        with comm_plan() as plan_bare:
            _, lbare = bare(gx, gy)
            lbare.backward()
        with comm_plan() as plan_auto:
            _, lauto = auto(gx, gy)
            lauto.backward()
        with comm_plan() as plan_ddp:
            _, lddp = ddp(gx, gy)
            lddp.backward()
        for loss in (lbare, lauto, lddp):
            assert abs(loss.item() - lref.item()) < 1e-5, (step, loss.item(), lref.item())
        check_grads(bare, ref, "bare")
        check_grads(auto, ref, "data_tensor_parallel")
        check_grads(wrapped, ref, "DDP")
        per_use, bucketed = dp_backward_all_reduces(plan_bare), dp_backward_all_reduces(plan_ddp)
        assert dp_backward_all_reduces(plan_auto) == {"data_parallel_bucket": auto_buckets, "add": 1}
        # bare: an all-reduce per use of each parameter (and one activation, below)
        assert "data_parallel_bucket" not in per_use and sum(per_use.values()) > n_params, per_use
        # DDP: one per bucket; what remains is the position embedding's output (a B
        # activation added to the S(0) token embeddings), not a parameter
        assert bucketed == {"data_parallel_bucket": n_buckets, "add": 1}, bucketed
        sgd(ref, bare, auto, wrapped)
        for m in (ref, bare, auto, wrapped):
            m.zero_grad()
    if r == 0:
        print(f"per use {dict(per_use)} -> bucketed {dict(bucketed)}", flush=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 3)
        self.shift = nn.Parameter(sf.full((3,), 0.1))

    def forward(self, x):
        h = self.fc2(self.fc1(x).tanh())
        return h * self.shift + self.shift.exp()  # a partial use and a whole one


def mlp():
    sf.manual_seed(0)
    ref, model = Net(), Net()
    model.load_state_dict(ref.state_dict())
    p = placement("cpu", list(range(W)))
    model.to_global(p, sbp.broadcast)
    ddp = DDP(model, bucket_cap_mb=1e-4)  # the world is the placement's only mesh dimension
    assert len(ddp.bucket_sizes()) > 1
    try:  # a hook averages; these buckets sum partial gradients
        ddp.register_comm_hook(None, lambda state, bucket: None)
    except RuntimeError as e:
        assert "sums the partial gradients of global parameters" in str(e), e
    else:
        raise AssertionError("a communication hook on global parameters' buckets must be refused")
    g = np.random.default_rng(0)
    for step in range(3):
        x = g.standard_normal((7, 6)).astype(np.float32)  # 7 rows: uneven over 2 or 3 ranks
        y = g.standard_normal((7, 3)).astype(np.float32)
        lref = F.mse_loss(ref(sf.tensor(x)), sf.tensor(y))
        lref.backward()
        gx = sf.tensor(x).to_global(p, sbp.broadcast).to_global(sbp=sbp.split(0))
        gy = sf.tensor(y).to_global(p, sbp.broadcast).to_global(sbp=sbp.split(0))
        with comm_plan() as plan:
            loss = ((ddp(gx) - gy) ** 2).mean()  # mse_loss has no sbp rule (it would gather)
            loss.backward()
        assert abs(loss.item() - lref.item()) < 1e-5, (step, loss.item(), lref.item())
        check_grads(model, ref, "mlp")
        counts = dp_backward_all_reduces(plan)
        assert counts["data_parallel_bucket"] == len(ddp.bucket_sizes()), counts
        assert not {"linear", "mul"} & set(counts), counts  # no per-use parameter all-reduce
        sgd(ref, model)
        ref.zero_grad()
        model.zero_grad()


{"gpt": gpt, "mlp": mlp}[sys.argv[1]]()
print(f"ALL OK {r}", flush=True)
