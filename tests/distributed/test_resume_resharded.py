"""Resume across world sizes and layouts (issue 10): saved on 2 ranks with ZeRO-2
(``fully_shard(reshard_after_forward=False)``: parameters, gradients and AdamW state
sharded ``S(0)``, uneven), resumed on 3 ranks with plain DDP (no sharding) and on 1 rank:
the loss curve after the resume equals the uninterrupted 2-rank run's. And ZeRO-1
(``ZeroRedundancyOptimizer``) on 2 ranks resumed with ZeRO-1 on 3 ranks.

The global batch (6 rows) is the same whatever the world size; each rank takes its rows,
so every layout computes the same mean loss and gradient. The run has AdamW with weight
decay, gradient clipping and a StepLR whose state is saved as plain values.
"""

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

COMMON = r"""
import sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F, shardflow.optim as optim
import shardflow.distributed as dist
import shardflow.distributed.checkpoint as dcp
GLOBAL, SAVE_AT, END = 6, 4, 8

def make():  # (7, 5): 4,3 rows on 2 ranks; (4, 7): 2,2; (2, 4) and (2,) too
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(), nn.Linear(4, 2))

def adamw(model):
    opt = optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    return opt, optim.lr_scheduler.StepLR(opt, 3, 0.5)

def run(model, opt, sched, start, end, r, W):
    losses = []
    rows = GLOBAL // W
    for step in range(start, end):
        g = np.random.default_rng(step)
        X = g.standard_normal((GLOBAL, 5)).astype(np.float32)
        Y = g.standard_normal((GLOBAL, 2)).astype(np.float32)
        loss = F.mse_loss(model(sf.tensor(X[r * rows:(r + 1) * rows])),
                          sf.tensor(Y[r * rows:(r + 1) * rows]))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step(); opt.zero_grad(); sched.step()
        part = sf.tensor(np.array([loss.item() / W], np.float64))
        if W > 1:
            dist.all_reduce(part)
        losses.append(float(part.numpy()[0]))
    return losses

def state_of(model, opt, sched, step):
    msd, osd = dcp.get_state_dict(model, opt)
    return {"model": msd, "optim": osd, "sched": sched.state_dict(), "step": step}

def resume(model, opt, sched, path):
    state = state_of(model, opt, sched, 0)
    dcp.load(state, checkpoint_id=path)
    dcp.set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    sched.load_state_dict(state["sched"])
    return state["step"]
"""

ZERO2_SAVE = COMMON + r"""
from shardflow.distributed.fsdp import fully_shard
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
m = make()
for i in (0, 2, 4):
    fully_shard(m[i], reshard_after_forward=False)
fully_shard(m, reshard_after_forward=False)
opt, sched = adamw(m)
before = run(m, opt, sched, 0, SAVE_AT, r, W)
state = state_of(m, opt, sched, SAVE_AT)
assert state["optim"]["state"]["0.weight"]["exp_avg"].is_global
assert str(state["model"]["0.weight"].sbp) == "(S(0),)"
idx = dcp.save(state, checkpoint_id=sys.argv[1])
assert idx["tensors"]["optim.state.0.weight.exp_avg"]["saved_as"]["sbp"] == ["S(0)"]
after = run(m, opt, sched, SAVE_AT, END, r, W)
if r == 0:
    print("CURVE", repr(before + after), flush=True)
"""

DDP_RESUME = COMMON + r"""
from shardflow.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
inner = make()
model = DDP(inner)
opt, sched = adamw(inner)
start = resume(model, opt, sched, sys.argv[1])
assert start == SAVE_AT and not inner[0].weight.is_global
after = run(model, opt, sched, start, END, r, W)
if r == 0:
    print("CURVE", repr(after), flush=True)
"""


ZERO1 = COMMON + r"""
from shardflow.nn.parallel import DistributedDataParallel as DDP
from shardflow.distributed.zero import ZeroRedundancyOptimizer
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
inner = make()
model = DDP(inner)
opt = ZeroRedundancyOptimizer(inner.parameters(), optim.AdamW, lr=0.02, weight_decay=0.1)
sched = optim.lr_scheduler.StepLR(opt, 3, 0.5)
if sys.argv[2] == "save":
    before = run(model, opt, sched, 0, SAVE_AT, r, W)
    dcp.save(state_of(model, opt, sched, SAVE_AT), checkpoint_id=sys.argv[1])
else:  # a fresh ZeRO-1 optimizer on another world size: its state is made, then resharded
    before = []
    assert resume(model, opt, sched, sys.argv[1]) == SAVE_AT
after = run(model, opt, sched, SAVE_AT, END, r, W)
if r == 0:
    print("CURVE", repr(before + after), flush=True)
"""


INIT = "dist.init_process_group()\n"


def _one_job(*cases) -> str:
    """One script that runs several of the scripts above in one launch: COMMON and
    ``init_process_group()`` once, then each ``(tag, script, argv)`` case's body (the script
    less COMMON and its init line) in its own copy of COMMON's namespace with ``sys.argv[1:]``
    = argv, its curve line tagged ``CURVE_{tag}``."""
    parts = [COMMON, INIT]
    for tag, script, argv in cases:
        assert script.startswith(COMMON) and script.count(INIT) == 1
        body = script[len(COMMON):].replace(INIT, "").replace('"CURVE"', repr(f"CURVE_{tag}"))
        parts.append(f"sys.argv[1:] = {list(argv)!r}\n"
                     f"exec(compile({body!r}, '<case {tag}>', 'exec'), dict(globals()))\n")
    return "".join(parts)


def _curve(res, tag="CURVE") -> list[float]:
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith(tag + " "))
    return eval(line.split(" ", 1)[1])  # a list literal printed by repr


@pytest.fixture(scope="module")
def curves(tmp_path_factory):
    """Both tests' jobs in two launches: on 2 ranks the ZeRO-2 run saving at SAVE_AT and the
    ZeRO-1 run saving at SAVE_AT; on 3 ranks the DDP resume of the first and the ZeRO-1 resume
    of the second. Returns the curves by tag and the ZeRO-2 checkpoint's path."""
    tmp = tmp_path_factory.mktemp("resume_resharded")
    z2, z1 = str(tmp / "zero2_ckpt"), str(tmp / "zero1_ckpt")
    tags = {2: ("zero2_full", "zero1_full"), 3: ("ddp_on3", "zero1_on3")}
    on2 = run_mpi(_one_job(("zero2_full", ZERO2_SAVE, [z2]), ("zero1_full", ZERO1, [z1, "save"])),
                  n=2, timeout=180).check()
    on3 = run_mpi(_one_job(("ddp_on3", DDP_RESUME, [z2]), ("zero1_on3", ZERO1, [z1, "load"])),
                  n=3, timeout=180).check()
    out = {tag: _curve(res, f"CURVE_{tag}") for res, n in ((on2, 2), (on3, 3)) for tag in tags[n]}
    return out, z2


def test_zero2_on_2_resumes_on_3_without_zero_and_on_1(curves):
    got, path = curves
    full = got["zero2_full"]
    assert len(full) == 8 and full[-1] < full[0]
    np.testing.assert_allclose(got["ddp_on3"], full[4:], rtol=1e-5)

    ns: dict = {}
    exec(COMMON, ns)  # one rank: this process, a plain model
    model = ns["make"]()
    opt, sched = ns["adamw"](model)
    start = ns["resume"](model, opt, sched, path)
    assert start == 4 and abs(sched.get_last_lr()[0] - 0.01) < 1e-12  # StepLR halved at 3
    on1 = ns["run"](model, opt, sched, start, 8, 0, 1)
    np.testing.assert_allclose(on1, full[4:], rtol=1e-5)


def test_zero1_on_2_resumes_with_zero1_on_3(curves):
    """ZeroRedundancyOptimizer's Split(0) state is resharded 2 -> 3 (rows 4,3 -> 3,3,1)."""
    got, _ = curves
    np.testing.assert_allclose(got["zero1_on3"], got["zero1_full"][4:], rtol=1e-5)
