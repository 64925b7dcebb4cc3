"""fully_shard (ZeRO-2 / ZeRO-3, HSDP) on real ranks against DDP and one process.

Each rank rebuilds the whole global batch from the step's seed, so it computes the
single-process reference itself (a plain shardflow model on the whole batch, with the
same AdamW, gradient clipping and LR schedule); DDP runs in the same job. Parameter
shapes are chosen so that 3 ranks get uneven and empty dim-0 shards and replicated
(too small to shard) parameters.
"""

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

COMMON = r"""
import sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F, shardflow.optim as optim
import shardflow.distributed as dist
from shardflow.distributed.fsdp import fully_shard, FSDPModule
from shardflow.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
ROWS = 2

def make():  # (7, 5): 3,3,1 rows on 3 ranks; (4, 7): 2,2,0; (2, 4) and (2,): replicated on 3
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(), nn.Linear(4, 2))

def batch(step):
    g = np.random.default_rng(step)
    return (g.standard_normal((ROWS * W, 5)).astype(np.float32),
            g.standard_normal((ROWS * W, 2)).astype(np.float32))

def train(model, opt, sched, steps, local=True, start=0):
    for step in range(start, start + steps):
        X, Y = batch(step)
        if local:
            X, Y = X[r * ROWS:(r + 1) * ROWS], Y[r * ROWS:(r + 1) * ROWS]
        F.mse_loss(model(sf.tensor(X)), sf.tensor(Y)).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step(); opt.zero_grad(); sched.step()

def adamw(model):
    opt = optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    return opt, optim.lr_scheduler.StepLR(opt, 4, 0.5)

def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
"""

EQUAL_SCRIPT = COMMON + r"""
sf.manual_seed(0)
ref = make()
ref_opt, ref_s = adamw(ref)
train(ref, ref_opt, ref_s, 10, local=False)
ddp_m = make(); sf.manual_seed(0); ddp_m.load_state_dict(make().state_dict())
ddp = DDP(ddp_m); o, s = adamw(ddp_m); train(ddp, o, s, 10)
for stage in (2, 3):
    sf.manual_seed(100 + r)  # different init per rank: fully_shard broadcasts rank 0's
    m = make()
    if r == 0:
        sf.manual_seed(0); m.load_state_dict(make().state_dict())
    for i in (0, 2, 4):
        fully_shard(m[i], reshard_after_forward=stage == 3)
    fully_shard(m, reshard_after_forward=stage == 3)
    assert isinstance(m, FSDPModule) and type(m).__name__ == "FSDPSequential"
    o, s = adamw(m)
    train(m, o, s, 10)
    for (name, p), q, d in zip(m.named_parameters(), ref.parameters(), ddp_m.parameters()):
        assert p.is_global and tuple(p.shape) == tuple(q.shape)
        full = p.numpy()  # gathers the shards
        assert rel(full, q.array) < 1e-6, (stage, name, rel(full, q.array))
        assert rel(full, d.array) < 1e-6, (stage, name, "ddp", rel(full, d.array))
    shards = {n: (tuple(p.array.shape), str(p.sbp)) for n, p in m.named_parameters()}
    st = m.fsdp_stats()
    # 10 steps x units with a sharded parameter (3 on 2 ranks; on 3 ranks the last Linear is
    # all replicated and all-reduced): stage 2 gathers once per step, stage 3 twice
    units = 3 if W == 2 else 2
    assert st["unshard"] == 10 * units * (stage - 1), st
    assert st["all_gather"] == 10 * (2 * units) * (stage - 1), st  # one per parameter
    # one reduce-scatter per sharded parameter too (from its own gradient, no packed copy)
    assert st["reduce_scatter"] == 10 * (2 * units) and st["all_reduce"] == 10 * (3 - units), st
    if r == 0:
        print("STAGE", stage, shards, flush=True)
print("ALL OK", r, flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 3])
def test_stages_2_and_3_equal_ddp_and_one_process(n, request):
    # 2 ranks: part of the one 2-rank job (two_rank_job below); 3 ranks: a job of its own
    if n == 2:
        res = request.getfixturevalue("two_rank_job").check()
    else:
        res = run_mpi(EQUAL_SCRIPT, n=n, timeout=120).check()
    assert res.stdout.count("ALL OK") == n
    if n == 3:  # uneven, empty and replicated shards were exercised
        assert "'0.weight': ((3, 5), '(S(0),)')" in res.stdout
        assert "'4.weight': ((2, 4), '(B,)')" in res.stdout
        assert "'2.weight': ((2, 7), '(S(0),)')" in res.stdout


GPT_SCRIPT = COMMON + r"""
from shardflow.models import GPT, GPTConfig
from shardflow.distributed.full_state import full_state_dict, shard_optimizer_state
from shardflow.distributed.fsdp import sharded_optimizer_state_dict
cfg = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)
def data(step):
    g = np.random.default_rng(50 + step)
    idx = g.integers(0, 11, size=(2 * W, 8))
    return idx, np.roll(idx, -1, axis=1)
def gstep(model, opt, step, local):
    x, y = data(step)
    if local:
        x, y = x[2 * r:2 * r + 2], y[2 * r:2 * r + 2]
    _, loss = model(sf.tensor(x), sf.tensor(y))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad()
    return loss
sf.manual_seed(0); ref = GPT(cfg)
sf.manual_seed(0); m = GPT(cfg)
for blk in m.transformer.h:
    fully_shard(blk)
fully_shard(m)
# SGD with momentum: Adam would turn the (theoretically zero) key-bias gradients, which are
# rounding noise, into +-lr steps whose signs differ between layouts
ro = optim.SGD(ref.parameters(), lr=0.5, momentum=0.9)
mo = optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
for step in range(3):
    gstep(ref, ro, step, False)
    gstep(m, mo, step, True)
whole = full_state_dict(m)
from shardflow.distributed.full_state import full_optimizer_state_dict
full_opt = full_optimizer_state_dict(mo)
for k, v in ref.state_dict().items():
    assert rel(whole[k].array, v.array) < 1e-5, (k, rel(whole[k].array, v.array))
# the prefetch ran: 4 units (root + 2 blocks... root first), each gathered in forward and
# (blocks) in backward
st = m.fsdp_stats()
assert st["unshard"] == 3 * (3 + 2), st
# state_dict: global tensors laid out S(0); a sharded round trip restores them
sd = m.state_dict()
w = sd["transformer.h.0.mlp.c_fc.weight"]
assert w.is_global and str(w.sbp) == "(S(0),)" and tuple(w.shape) == (64, 16)
osd = sharded_optimizer_state_dict(mo)
assert any(getattr(v, "is_global", False) for st_ in osd["state"].values() for v in st_.values())
saved = {k: v.detach().clone() for k, v in sd.items()}  # global copies, laid out as the model
saved_opt = mo.state_dict()
l_first = gstep(m, mo, 3, True).item()
m.load_state_dict(saved)
mo.load_state_dict(saved_opt)
l_again = gstep(m, mo, 3, True).item()
# a whole checkpoint (one process's) loads before fully_shard, and the optimizer is re-sharded
sf.manual_seed(0); m2 = GPT(cfg)
m2.load_state_dict(whole)
mo2 = optim.SGD(m2.parameters(), lr=0.5, momentum=0.9)
mo2.load_state_dict(full_opt)
for blk in m2.transformer.h:
    fully_shard(blk, reshard_after_forward=False)
fully_shard(m2, reshard_after_forward=False)
shard_optimizer_state(mo2)
l2 = gstep(m2, mo2, 3, True).item()
assert l_again == l_first, (l_again, l_first)  # same shards, same state: bit for bit
assert abs(l2 - l_first) < 1e-5 * abs(l_first), (l2, l_first)
print("GPT OK", r, flush=True)
"""


@pytest.mark.mpi
def test_gpt_blocks_prefetch_state_dict_round_trip(two_rank_job):
    res = two_rank_job.check()
    assert res.stdout.count("GPT OK") == 2


FEATURES_SCRIPT = COMMON + r"""
from shardflow.distributed import init_device_mesh
mode = sys.argv[1]
sf.manual_seed(0)
ref = make()
if mode == "hsdp":
    mesh = init_device_mesh("cpu", (2, W // 2), mesh_dim_names=("dp_replicate", "dp_shard"))
    ref_opt, ref_s = adamw(ref); train(ref, ref_opt, ref_s, 6, local=False)
    sf.manual_seed(0); m = make()
    for i in (0, 2, 4):
        fully_shard(m[i], mesh=mesh)
    fully_shard(m, mesh=mesh)
    o, s = adamw(m); train(m, o, s, 6)
    w = m[0].weight
    rows = 4 if mesh.get_coordinate()[1] == 0 else 3  # 7 rows over the 2 ranks of dp_shard
    assert str(w.sbp) == "(B, S(0))" and w.array.shape == (rows, 5), (w.sbp, w.array.shape)
    for p, q in zip(m.parameters(), ref.parameters()):
        assert rel(p.numpy(), q.array) < 1e-6, rel(p.numpy(), q.array)
elif mode == "accumulate":
    # two micro-batches: the first without gradient sync, then a synchronised one
    sf.manual_seed(0); m = make()
    fully_shard(m[0]); fully_shard(m)
    o, s = adamw(m)
    for step in range(3):
        m.set_requires_gradient_sync(False)
        for k, part in enumerate((0, 1)):
            if k == 1:
                m.set_requires_gradient_sync(True)
            X, Y = batch(10 * step + part)
            X, Y = X[r * ROWS:(r + 1) * ROWS], Y[r * ROWS:(r + 1) * ROWS]
            (F.mse_loss(m(sf.tensor(X)), sf.tensor(Y)) / 2).backward()
        o.step(); o.zero_grad(); s.step()
    ro, rs = adamw(ref)
    for step in range(3):
        for part in (0, 1):
            X, Y = batch(10 * step + part)
            (F.mse_loss(ref(sf.tensor(X)), sf.tensor(Y)) / 2).backward()
        ro.step(); ro.zero_grad(); rs.step()
    # summed in another order than the reference (per rank, then over ranks): 1e-5; a lost
    # or doubled micro-batch would be off by far more
    for p, q in zip(m.parameters(), ref.parameters()):
        assert rel(p.numpy(), q.array) < 1e-5, rel(p.numpy(), q.array)
print("FEATURE OK", mode, r, flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("mode,n", [("hsdp", 4), ("accumulate", 2)])
def test_hsdp_and_gradient_accumulation(mode, n, request):
    if mode == "accumulate":  # part of the one 2-rank job (two_rank_job below)
        res = request.getfixturevalue("two_rank_job").check()
    else:
        res = run_mpi(FEATURES_SCRIPT, n=n, timeout=120, args=[mode]).check()
    assert res.stdout.count(f"FEATURE OK {mode}") == n, res.output


# -- single process (a world of one): API and errors ------------------------------------
def _mlp():
    import shardflow.nn as nn

    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def test_one_process_equals_plain_model_and_offload_is_a_noop():
    import shardflow as sf
    import shardflow.optim as optim
    from shardflow.distributed.fsdp import CPUOffloadPolicy, fully_shard

    results = []
    for kind in ("plain", "zero3", "zero3_offload"):
        sf.manual_seed(0)
        m = _mlp()
        if kind != "plain":
            pol = CPUOffloadPolicy() if kind.endswith("offload") else None
            fully_shard(m[0], offload_policy=pol)
            fully_shard(m, offload_policy=pol)
        opt = optim.AdamW(m.parameters(), lr=0.05)
        x = sf.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
        for _ in range(4):
            (m(x) ** 2).mean().backward()
            opt.step()
            opt.zero_grad()
        results.append([p.numpy().copy() for p in m.parameters()])
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_stage3_frees_gathered_parameters_between_forward_and_backward():
    import shardflow as sf
    from shardflow.distributed.fsdp import fully_shard

    sf.manual_seed(0)
    m = _mlp()
    fully_shard(m[0])
    fully_shard(m)
    x = sf.randn(4, 5)
    out = m(x)
    g = m[0].__dict__["_fsdp_state"].group
    assert g.state == "sharded" and m[0].weight.array.shape == (7, 5) and m[0].weight.is_global
    assert not np.any(g.full_views[0])  # the pages were given back: they read as zeros
    out.sum().backward()
    assert m[0].weight.grad is not None and m[0].weight.grad.is_global


def test_errors_are_clear():
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed import init_device_mesh
    from shardflow.distributed.fsdp import fully_shard
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    with pytest.raises(ValueError, match="dp_replicate"):
        fully_shard(_mlp(), mesh=init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp")))
    with pytest.raises(RuntimeError, match="DistributedDataParallel"):
        fully_shard(DDP(_mlp()))
    m = _mlp()
    fully_shard(m)
    with pytest.raises(RuntimeError, match="already fully_shard"):
        fully_shard(m)
    with pytest.raises(RuntimeError, match="also managed by DistributedDataParallel"):
        DDP(m)(sf.randn(2, 5))  # DDP around a sharded model: refused at the first forward
    with pytest.raises(ValueError, match="3 dimensions"):
        fully_shard(_mlp(), mesh=init_device_mesh("cpu", (1, 1, 1)))

    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)

        def forward(self, x):
            return self.a(x)

    b = Branchy()
    fully_shard(b)
    b(sf.randn(2, 3)).sum().backward()
    with pytest.raises(RuntimeError, match=r"missing b\.weight, b\.bias"):
        b(sf.randn(2, 3))


NO_PACKED_COPY_SCRIPT = COMMON + r"""
# a parameter whose rows divide evenly is reduce-scattered straight from its own .grad array
# (no unit-sized packed copy beside it: ZeRO-3's peak memory, docs/ZERO.md "Memory"); an
# uneven one goes through a padded buffer. The gradients still equal one process's.
sf.manual_seed(0)
ref = make()
sf.manual_seed(0)
m = make()
grads_seen = {}  # id(p) -> the .grad array autograd gave p (recorded before FSDP takes it)
for p in m.parameters():
    p.register_post_accumulate_grad_hook(lambda p: grads_seen.__setitem__(id(p), p.grad.array))
for i in (0, 2):
    fully_shard(m[i])
fully_shard(m)
sends = []  # every reduce-scatter input (observed through a wrapper on the shard group)
groups = {id(st.group.shard_pg): st.group.shard_pg for mod in m.modules()
          if (st := mod.__dict__.get("_fsdp_state")) is not None and st.group is not None}
for pg in groups.values():
    def rs(array, op, out=None, async_op=False, _orig=pg.reduce_scatter):
        sends.append(array)
        return _orig(array, op, out=out, async_op=async_op)
    pg.reduce_scatter = rs
X, Y = batch(0)
F.mse_loss(m(sf.tensor(X[r * ROWS:(r + 1) * ROWS])), sf.tensor(Y[r * ROWS:(r + 1) * ROWS])).backward()
F.mse_loss(ref(sf.tensor(X)), sf.tensor(Y)).backward()
even = {id(p) for p in m.parameters() if p.shape[0] % W == 0 and p.shape[0] >= W}
assert even and len(sends) == sum(1 for p in m.parameters() if p.shape[0] >= W), len(sends)
for p in m.parameters():
    if id(p) in even:
        assert any(np.shares_memory(s, grads_seen[id(p)]) for s in sends), p.shape
for p, q in zip(m.parameters(), ref.parameters()):  # the mean over ranks of local means
    assert rel(p.grad.numpy(), q.grad.array) < 1e-5, (p.shape, rel(p.grad.numpy(), q.grad.array))
print("NO PACKED COPY OK", r, flush=True)
"""


def _body(script):
    """A script of this module less the COMMON prelude every one of them starts with."""
    assert script.startswith(COMMON)
    return script[len(COMMON):]


# The 2-rank scripts run in ONE job (one launch instead of four): COMMON once, then each
# script's body in a namespace of its own (a copy of COMMON's), in this order. The no-packed-
# copy script wraps its shard groups' reduce_scatter, so it goes last. argv[1] is the
# features script's mode. A failing body aborts the job; its traceback names the body
# ("<fsdp case NAME>") and the CASE lines say which ones had finished.
TWO_RANK_BODIES = [("equal", _body(EQUAL_SCRIPT)), ("accumulate", _body(FEATURES_SCRIPT)),
                   ("gpt", _body(GPT_SCRIPT)), ("no_packed_copy", _body(NO_PACKED_COPY_SCRIPT))]
TWO_RANK_SCRIPT = COMMON + f"""
for _name, _src in {TWO_RANK_BODIES!r}:
    exec(compile(_src, f"<fsdp case {{_name}}>", "exec"), dict(globals()))
    print("CASE", _name, "OK", r, flush=True)
"""


@pytest.fixture(scope="module")
def two_rank_job():
    return run_mpi(TWO_RANK_SCRIPT, n=2, timeout=240, args=["accumulate"])


@pytest.mark.mpi
def test_even_parameters_reduce_scatter_from_their_own_grad(two_rank_job):
    # 2 ranks: (7, 5) and (7,) split 4 + 3 (padded), the others evenly
    res = two_rank_job.check()
    assert res.stdout.count("NO PACKED COPY OK") == 2, res.output
