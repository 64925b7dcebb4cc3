"""Global tensors on a ``placement("cuda")`` in real ranks, without a GPU: CuPy's host
stand-in on every rank, the fake NCCL (NCCL's calls over MPI) under the NCCL
communicator (``tests.doubles.host_cuda.install()``). Every boxing between broadcast, partial-sum and the splits, with gradients, and a
tensor-parallel MLP, against the local computation."""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

GLOBAL_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf
import shardflow.distributed as dist
from shardflow.distributed import sbp, placement, distribute_tensor

dist.init_process_group("nccl")
S, B, P = sbp.split, sbp.broadcast, sbp.partial_sum
mesh = placement("cuda")

def close(a, b, what):
    assert np.allclose(a, b, rtol=1e-5, atol=1e-5), (what, np.abs(a - b).max())

full = np.random.default_rng(3).standard_normal((6, 8)).astype(np.float32)
R = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
kinds = [B, P, S(0), S(1), sbp.split(1, blocks=2)]  # blocks: fused q/k/v-style splits
for src in kinds:
    for dst in kinds:
        leaf = sf.tensor(full, device="cuda", requires_grad=True)
        x = distribute_tensor(leaf, mesh, B).to_global(sbp=src)
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
print(f"rank {dist.get_rank()}: ok, {calls} NCCL calls")
"""


def test_global_tensors_on_a_cuda_placement_over_nccl():
    res = run_mpi(GLOBAL_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output


HEADER = r"""
import itertools, warnings
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn.functional as F
from shardflow.distributed import sbp, placement, distribute_tensor
warnings.simplefilter("ignore")
dist.init_process_group("nccl")
S, B, P = sbp.split, sbp.broadcast, sbp.partial_sum
rank, world = dist.get_rank(), dist.get_world_size()

def close(a, b, what, tol=1e-5):
    a = np.asarray(a, dtype=np.float64); b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.abs(a - b).max() if a.size else 0.0
    assert np.allclose(a, b, rtol=tol, atol=tol), (what, err)

def on_cuda(t, what):
    assert t.device.type == "cuda", (what, t.device)
"""

OPS_SCRIPT = HEADER + r"""
mesh = placement("cuda")

def run_case(name, fn, shapes, layouts, kinds=None, seed=0):
    kinds = kinds or ["float"] * len(shapes)
    g = np.random.default_rng(seed)
    arrays = [g.integers(0, 7, size=s) if k == "int" else g.standard_normal(s).astype(np.float32)
              for s, k in zip(shapes, kinds)]
    ref_in = [sf.tensor(a, requires_grad=(k == "float")) for a, k in zip(arrays, kinds)]
    ref = fn(*ref_in)
    R = np.random.default_rng(seed + 1).standard_normal(tuple(ref.shape)).astype(np.float32)
    (ref * sf.tensor(R)).sum().backward()
    for lay in layouts:
        leaves = [sf.tensor(a, device="cuda", requires_grad=(k == "float")) for a, k in zip(arrays, kinds)]
        gin = [distribute_tensor(t, mesh, s) for t, s in zip(leaves, lay)]
        out = fn(*gin)
        assert out.is_global, (name, lay)
        on_cuda(out.to_local(), (name, lay))
        close(out.numpy(), ref.numpy(), f"{name} {lay} forward")
        (out * sf.tensor(R, device="cuda")).sum().backward()
        for t, r, k in zip(leaves, ref_in, kinds):
            if k == "float":
                on_cuda(t.grad, (name, lay, "grad"))
                close(t.grad.cpu().numpy(), r.grad.numpy(), f"{name} {lay} grad")

one = lambda nd: [(s,) for s in [B] + [S(d) for d in range(nd)]]
two = lambda a, b: [x + y for x, y in itertools.product(one(a), one(b))]
run_case("add", lambda x, y: x + y, [(6, 4), (6, 4)], two(2, 2))
run_case("mul_bcast", lambda x, b: x * b, [(6, 4), (4,)], two(2, 1))
run_case("sum_dim0", lambda x: x.sum(0), [(6, 4)], one(2))
run_case("mean_all", lambda x: x.mean(), [(6, 4)], one(2))
run_case("amax_dim1", lambda x: x.amax(dim=1), [(6, 4)], one(2))
run_case("matmul", lambda a, b: a @ b, [(6, 4), (4, 6)], two(2, 2))
run_case("linear", lambda x, w, b: F.linear(x, w, b), [(2, 4, 6), (4, 6), (4,)],
         [x + w + b for x in one(3)[:3] for w in one(2) for b in one(1)])
run_case("view", lambda x: (x.view(4, 3, 4) * 1.5).reshape(12, 4), [(4, 12)], one(2))
run_case("transpose", lambda x: x.transpose(0, 1).contiguous() * 2, [(4, 6)], one(2))
run_case("cat", lambda x, y: sf.cat([x, y], dim=0) * 3, [(4, 6), (4, 6)], two(2, 2))
run_case("getitem", lambda x: x[:, 1:4] * 2, [(6, 4)], one(2))
run_case("softmax", lambda x: F.softmax(x, dim=-1), [(6, 4)], one(2))
run_case("layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b), [(2, 4, 6), (6,), (6,)],
         [x + (B, B) for x in one(3)])
run_case("embedding", lambda i, w: F.embedding(i, w), [(4, 5), (8, 6)],
         [i + w for i in one(2) for w in one(2)], kinds=["int", "float"])
run_case("cross_entropy", lambda x, t: F.cross_entropy(x, t), [(6, 8), (6,)],
         [x + t for x in one(2) for t in one(1)], kinds=["float", "int"])
run_case("fallback_cumsum", lambda x: x.cumsum(0) * 2, [(6, 4)], one(2))

# creation on a placement and *_like: the same values as one process, on the device
sf.manual_seed(7)
ref = sf.randn(6, 4, device="cuda").cpu().numpy()
sf.manual_seed(7)
x = sf.randn(6, 4, placement=mesh, sbp=S(0))
on_cuda(x.to_local(), "randn on a cuda placement")
close(x.numpy(), ref, "randn")
sf.manual_seed(8)
ref = sf.rand_like(sf.zeros(6, 4, device="cuda")).cpu().numpy()
sf.manual_seed(8)
y = sf.rand_like(x)
on_cuda(y.to_local(), "rand_like")
assert y.sbp == x.sbp
close(y.numpy(), ref, "rand_like")
print(f"rank {rank}: ops ok")
"""


def test_global_ops_on_a_cuda_placement_match_one_cpu_process():
    res = run_mpi(OPS_SCRIPT, n=2, timeout=240).check()
    assert "rank 0: ops ok" in res.output and "rank 1: ops ok" in res.output


COLLECTIVES_SCRIPT = HEADER + r"""
# torch.distributed's functional collectives on cuda tensors: results stay on the device and
# equal the NumPy expectation; every rank's input is base * (rank + 1).
base = np.arange(12, dtype=np.float32).reshape(4, 3)
mine = base * (rank + 1)
scale = sum(r + 1 for r in range(world))
calls0 = cuda_api.calls

def dev(a):
    return sf.tensor(np.ascontiguousarray(a), device="cuda")

def host(t, what):
    on_cuda(t, what)
    return t.cpu().numpy()

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
close(host(out, "reduce_scatter_tensor"), full[2 * rank:2 * rank + 2] * scale, "reduce_scatter_tensor")

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

# a global cuda tensor as a whole: full_tensor (differentiable, on the device) and .numpy()
mesh = placement("cuda")
g = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
for s in (B, P, S(0), S(1)):
    leaf = sf.tensor(g, device="cuda", requires_grad=True)
    x = distribute_tensor(leaf, mesh, B).to_global(sbp=s)
    assert isinstance(x.numpy(), np.ndarray)
    close(x.numpy(), g, f"{s} numpy")
    f = x.full_tensor()
    assert not f.is_global
    close(host(f, "full_tensor"), g, f"{s} full_tensor")
    (f * 3).sum().backward()
    close(host(leaf.grad, "full_tensor grad"), np.full_like(g, 3), f"{s} full_tensor grad")
    # a module parameter laid out in place keeps a device shard; full_state_dict gathers it
import shardflow.nn as nn
from shardflow.distributed.full_state import full_state_dict
lin = nn.Linear(4, 6).to("cuda")
w = lin.weight.cpu().numpy()
lin.to_global(mesh, S(0))
on_cuda(lin.weight.to_local(), "module.to_global")
close(lin.weight.numpy(), w, "module.to_global")
sd = full_state_dict(lin)
on_cuda(sd["weight"], "full_state_dict")
close(sd["weight"].cpu().numpy(), w, "full_state_dict")
# optimizer state loaded whole is cut back to this rank's shard, on the device (blocks split:
# an index array taken on the device)
from shardflow.distributed import layout
from shardflow.distributed.full_state import shard_optimizer_state
lin2 = nn.Linear(4, 6).to("cuda")
w2 = lin2.weight.cpu().numpy()
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
print(f"rank {rank}: collectives ok")
"""


@pytest.mark.parametrize("n", [2, 3])
def test_functional_collectives_and_whole_tensors_on_cuda(n):
    res = run_mpi(COLLECTIVES_SCRIPT, n=n, timeout=180).check()
    assert all(f"rank {r}: collectives ok" in res.output for r in range(n))


GPT_TP_SCRIPT = HEADER + r"""
# GPT-mini, tensor parallel (Megatron, vocabulary-parallel embedding and cross-entropy) on a
# cuda model against one CPU process, with AdamW steps.
from shardflow.distributed.tensor_parallel import parallelize_module
from shardflow.models.gpt import GPT, GPTConfig
cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=4, n_embd=16)
sf.manual_seed(0); ref = GPT(cfg)
sf.manual_seed(0); m = GPT(cfg).to("cuda")
data = np.random.default_rng(0).integers(0, 32, size=(3, 4, 9))
# a 1-D mesh: the fake NCCL serves world-sized communicators only (a dp x tp mesh needs groups)
mesh = placement("cuda")
parallelize_module(m, mesh, m.tensor_parallel_plan(vocab_parallel=True))
m.to_global(mesh, B)
opt_ref, opt = ref.configure_optimizers(0.1, 1e-2), m.configure_optimizers(0.1, 1e-2)
for step in range(3):
    batch = data[step]
    x, y = np.ascontiguousarray(batch[:, :-1]), np.ascontiguousarray(batch[:, 1:])
    _, lref = ref(sf.tensor(x), sf.tensor(y))
    opt_ref.zero_grad(); lref.backward()
    gx, gy = (sf.tensor(a, device="cuda").to_global(mesh, B) for a in (x, y))
    opt.zero_grad()
    logits, loss = m(gx, gy)
    loss.backward()
    on_cuda(loss.to_local(), "loss")
    assert abs(loss.item() - lref.item()) < 1e-5, (step, loss.item(), lref.item())
    opt_ref.step(); opt.step()
for (name, a), (_, b) in zip(m.named_parameters(), ref.named_parameters()):
    on_cuda(a.to_local(), name)
    assert np.abs(a.numpy() - b.numpy()).max() < 1e-3, name
print(f"rank {rank}: gpt ok")
"""


def test_gpt_tensor_parallel_on_cuda_tracks_one_cpu_process():
    res = run_mpi(GPT_TP_SCRIPT, n=2, timeout=240).check()
    assert "rank 0: gpt ok" in res.output and "rank 1: gpt ok" in res.output
