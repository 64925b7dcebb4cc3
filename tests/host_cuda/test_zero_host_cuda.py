"""ZeRO-1 (``ZeroRedundancyOptimizer``), FSDP (``fully_shard``, ZeRO-2 and ZeRO-3),
``parallelize`` and the tf.distribute-style strategies with parameters on ``device="cuda"``
in real ranks, without a GPU: every rank installs CuPy's host stand-in and the
fake NCCL, which carries NCCL's calls over MPI on the host memory behind the pointers, and
``init_process_group("nccl")`` builds the NCCL communicator. Each is checked against the same
training in one CPU process (every rank rebuilds the whole global batch from the step's
seed and computes that reference itself), and the NCCL call counter proves the device
buffers (all-gathers, reduce-scatters, all-reduces) went through NCCL.

HSDP (``fully_shard`` on a 2-D ``("dp_replicate", "dp_shard")`` cuda mesh) runs on 4 ranks:
its shard and replicate dimensions are sub-group NCCL communicators.
"""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

COMMON = r"""
import sys
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F, shardflow.optim as optim
import shardflow.distributed as dist
from shardflow.comm import world
from shardflow.comm.nccl import NCCLCommunicator

dist.init_process_group("nccl")
r, W = dist.get_rank(), dist.get_world_size()
assert isinstance(world.get_world(), NCCLCommunicator), type(world.get_world())
ROWS = 2

def make(dev="cpu"):  # on 2 ranks: (7, 5) splits 4 + 3 rows (padded gathers), (4, 7) 2 + 2,
    sf.manual_seed(0)  # (1, 4) and (1,) are too small to shard (replicated)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(), nn.Linear(4, 1)).to(dev)

def batch(step):
    g = np.random.default_rng(step)
    return (g.standard_normal((ROWS * W, 5)).astype(np.float32),
            g.standard_normal((ROWS * W, 1)).astype(np.float32))

def step_on(model, opt, step, dev, local):
    X, Y = batch(step)
    if local:  # this rank's rows of the global batch
        X, Y = X[r * ROWS:(r + 1) * ROWS], Y[r * ROWS:(r + 1) * ROWS]
    loss = F.mse_loss(model(sf.tensor(X, device=dev)), sf.tensor(Y, device=dev))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step(); opt.zero_grad()
    return loss

def host(t):
    return t.detach().cpu().numpy()

def close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(what))

ref = make()  # one CPU process on the whole batch
ref_opt = optim.AdamW(ref.parameters(), lr=0.02, weight_decay=0.1)
for step in range(4):
    step_on(ref, ref_opt, step, "cpu", local=False)
"""

ZERO1_SCRIPT = COMMON + r"""
from shardflow.distributed.zero import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP

sf.manual_seed(3 + r)
m = make("cuda")
ddp = DDP(m)  # rank 0's weights
zo = ZeroRedundancyOptimizer(m.parameters(), optim.AdamW, lr=0.02, weight_decay=0.1)
for step in range(4):
    step_on(ddp, zo, step, "cuda", local=True)
for (name, p), q in zip(m.named_parameters(), ref.parameters()):
    assert p.device.type == "cuda", name
    close(host(p), host(q), name)
# the inner optimizer's state is this rank's rows, on the device
for st in zo.optim.state.values():
    for v in st.values():
        if v.array.ndim:
            assert v.device.type == "cuda"
want = ref_opt.state_dict()["state"]
ssd = zo.sharded_state_dict()
ea = ssd["state"][0]["exp_avg"]
assert ea.is_global and str(ea.sbp) == "(S(0),)" and tuple(ea.shape) == (7, 5)
assert ea.to_local().device.type == "cuda"
close(ea.numpy(), host(want[0]["exp_avg"]), "sharded exp_avg")
# PyTorch's protocol: consolidate on rank 0; the whole state loads into a fresh ZeRO optimizer
zo.consolidate_state_dict(to=0)
whole = [zo.state_dict() if r == 0 else None]
dist.broadcast_object_list(whole, src=0)
whole = whole[0]
for i, st in want.items():
    for k, v in st.items():
        close(host(whole["state"][i][k]), host(v), (i, k))
m2 = make("cuda"); m2.load_state_dict(m.state_dict())
zo2 = ZeroRedundancyOptimizer(m2.parameters(), optim.AdamW, lr=0.02, weight_decay=0.1)
zo2.load_state_dict(whole)
before = cuda_api.calls
ddp2 = DDP(m2)
for step in range(4, 6):
    step_on(ddp2, zo2, step, "cuda", local=True)
    step_on(ddp, zo, step, "cuda", local=True)
    step_on(ref, ref_opt, step, "cpu", local=False)
for p, q, o in zip(m2.parameters(), ref.parameters(), m.parameters()):
    close(host(p), host(q), "resumed vs one process")
    close(host(p), host(o), "resumed vs continued")
calls = cuda_api.calls
assert calls - before >= 2 * 2 * 2, (before, calls)  # all-reduces and all-gathers per step
print(f"rank {r}: ok, {calls} NCCL calls", flush=True)
"""


def test_zero1_on_cuda_over_nccl_equals_one_cpu_process():
    res = run_mpi(ZERO1_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output


FSDP_SCRIPT = COMMON + r"""
from shardflow.distributed.fsdp import fully_shard, sharded_optimizer_state_dict

for stage in (2, 3):
    sf.manual_seed(100 + r)  # different per rank: fully_shard broadcasts rank 0's
    m = make("cuda")
    if r == 0:
        m.load_state_dict(make().state_dict())
    for i in (0, 2, 4):
        fully_shard(m[i], reshard_after_forward=stage == 3)
    fully_shard(m, reshard_after_forward=stage == 3)
    o = optim.AdamW(m.parameters(), lr=0.02, weight_decay=0.1)
    before = cuda_api.calls
    for step in range(4):
        step_on(m, o, step, "cuda", local=True)
    calls = cuda_api.calls - before
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        assert p.is_global and p.to_local().device.type == "cuda", name
        assert p.grad is None
        close(p.numpy(), host(q), (stage, name))  # gathers the shards
    st = m.fsdp_stats()
    # 4 steps x 2 units with a sharded parameter (the last Linear is replicated and
    # all-reduced): stage 2 gathers once per step, stage 3 twice; every one through NCCL
    assert st["unshard"] == 4 * 2 * (stage - 1), st
    assert st["reduce_scatter"] == 4 * 2 and st["all_reduce"] == 4, st
    assert calls >= st["all_gather"] + st["reduce_scatter"] + st["all_reduce"], (calls, st)
    w = m.state_dict()["0.weight"]
    assert w.is_global and str(w.sbp) == "(S(0),)" and w.to_local().shape == ((4, 5) if r == 0 else (3, 5))
    osd = sharded_optimizer_state_dict(o)
    ea = osd["state"][0]["exp_avg"]
    assert ea.is_global and ea.to_local().device.type == "cuda"
    close(ea.numpy(), host(ref_opt.state_dict()["state"][0]["exp_avg"]), (stage, "exp_avg"))
    print(f"rank {r}: stage {stage} ok, {calls} NCCL calls", flush=True)
"""


def test_fsdp_stages_2_and_3_on_cuda_over_nccl_equal_one_cpu_process():
    res = run_mpi(FSDP_SCRIPT, n=2, timeout=120).check()
    for stage in (2, 3):
        assert f"rank 0: stage {stage} ok" in res.output and f"rank 1: stage {stage} ok" in res.output


HSDP_SCRIPT = COMMON + r"""
from shardflow.distributed import init_device_mesh
from shardflow.distributed.fsdp import fully_shard

mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp_replicate", "dp_shard"))
sf.manual_seed(100 + r)  # different per rank: fully_shard broadcasts rank 0's
m = make("cuda")
if r == 0:
    m.load_state_dict(make().state_dict())
for i in (0, 2, 4):
    fully_shard(m[i], mesh=mesh)
fully_shard(m, mesh=mesh)
o = optim.AdamW(m.parameters(), lr=0.02, weight_decay=0.1)
before = cuda_api.calls
for step in range(4):
    step_on(m, o, step, "cuda", local=True)
calls = cuda_api.calls - before
w = m[0].weight
rows = 4 if mesh.get_coordinate()[1] == 0 else 3  # 7 rows over the 2 ranks of dp_shard
assert str(w.sbp) == "(B, S(0))" and w.to_local().shape == (rows, 5), (w.sbp, w.to_local().shape)
for (name, p), q in zip(m.named_parameters(), ref.parameters()):
    assert p.is_global and p.to_local().device.type == "cuda", name
    close(p.numpy(), host(q), name)
st = m.fsdp_stats()
# per step (ZeRO-3): 2 units with sharded parameters gathered twice; their 2 reduce-scatters
# over dp_shard each followed by an all-reduce over dp_replicate; the replicated last Linear
# all-reduced over both dimensions (2); every one through NCCL's sub-group communicators
assert st["unshard"] == 4 * 2 * 2 and st["reduce_scatter"] == 4 * 2 and st["all_reduce"] == 4 * 4, st
assert st["bytes"]["all_reduce:replicate"] > 0, st
assert calls >= st["all_gather"] + st["reduce_scatter"] + st["all_reduce"], (calls, st)
print(f"rank {r}: ok, {calls} NCCL calls", flush=True)
"""


def test_hsdp_on_a_2d_cuda_mesh_over_nccl_equals_one_cpu_process():
    res = run_mpi(HSDP_SCRIPT, n=4, timeout=180).check()
    for k in range(4):
        assert f"rank {k}: ok" in res.output


STRATEGY_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.distributed.strategies import OneDeviceStrategy, MirroredStrategy, CentralStorageStrategy

dist.init_process_group("nccl")
r = dist.get_rank()
G = 8  # global batch

def batches():
    for t in range(3):
        g = np.random.default_rng(t)
        yield (g.standard_normal((G, 4)).astype(np.float32), g.standard_normal((G, 2)).astype(np.float32))

def train(strategy, dev):
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

ref, ref_loss = train(OneDeviceStrategy(), "cpu")
for cls in (MirroredStrategy, CentralStorageStrategy):
    before = cuda_api.calls
    params, losses = train(cls(), "cuda")
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

# parallelize: dp=2 with ZeRO-1 and dp=2 over global tensors, GPT on cuda vs one CPU process
from shardflow.models import GPT, GPTConfig
from shardflow.models.gpt_pipeline import gpt_loss
cfg = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)

def data(step, dev):
    g = np.random.default_rng(50 + step)
    idx = g.integers(0, 11, size=(8, 8))
    return sf.tensor(idx, device=dev), sf.tensor(np.roll(idx, -1, axis=1), device=dev)

def build(dev):
    sf.manual_seed(0)
    m = GPT(cfg).to(dev)
    return m, sf.optim.AdamW(m.parameters(), lr=0.01)

ref, opt = build("cpu")
ref_losses = []
for step in range(3):
    opt.zero_grad(); _, loss = ref(*data(step, "cpu")); loss.backward(); opt.step()
    ref_losses.append(loss.item())
for zero in (1, 0):
    model, opt = build("cuda")
    par = sf.parallelize(model, opt, dp=2, zero=zero, batch_size=8, print_plan=False,
                         loss_fn=lambda out, y: gpt_loss(out[0], y))
    losses = [par.step(*data(step, "cuda")) for step in range(3)]
    np.testing.assert_allclose(losses, ref_losses, rtol=0, atol=1e-5, err_msg=f"zero={zero}")
    if zero:  # (dp over global tensors: full_state_dict needs full_state.py on device arrays)
        full = par.full_state_dict()
        for k, v in ref.state_dict().items():
            assert full[k].device.type == "cuda", k
            np.testing.assert_allclose(full[k].cpu().numpy(), v.numpy(), rtol=0, atol=2e-5, err_msg=k)
print(f"rank {r}: ok, {cuda_api.calls} NCCL calls", flush=True)
"""


def test_strategies_and_parallelize_on_cuda_over_nccl_equal_one_cpu_process():
    res = run_mpi(STRATEGY_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output
