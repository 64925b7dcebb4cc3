"""Resuming a ``fully_shard`` run continues with the right optimizer state (issue 27).

The user's program: an FSDP2 training loop (AdamW, 2 ranks) saved mid-run three ways —
``dcp.save`` of ``optimizer.state_dict()`` (PyTorch's FSDP2 recipe: its state tensors are
DTensors), ``dcp.save`` of ``get_state_dict``, and one file of whole tensors from
``get_optimizer_state_dict(options=StateDictOptions(full_state_dict=True))`` — then resumed
in a fresh job. Before the fix the optimizer state of a sharded parameter was a plain
shard-shaped tensor: the first save wrote rank 0's half of every moment as if it were the
whole (``exp_avg`` (16, 16) for a (32, 16) weight) and the resumed run drifted from the
uninterrupted one. Each resumed loss must equal the uninterrupted run's, step by step, and
the uninterrupted run must equal PyTorch's AdamW on the whole batch (FSDP averages the
ranks' gradients of equal row counts: the gradient of the whole batch's mean loss).
PyTorch's own FSDP2 (gloo, torchrun) gives the same curve on this program.
"""

import json

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

# the data and initial weights, shared by the ranks and the PyTorch reference
DATA = r"""
import numpy as np
GLOBAL, SAVE_AT, END = 8, 3, 6

def initial():
    g = np.random.default_rng(0)
    shapes = {"0.weight": (32, 16), "0.bias": (32,), "2.weight": (8, 32), "2.bias": (8,)}
    return {k: (g.standard_normal(s) * 0.3).astype(np.float32) for k, s in shapes.items()}

def batch(step):
    g = np.random.default_rng(100 + step)
    return (g.standard_normal((GLOBAL, 16)).astype(np.float32),
            g.standard_normal((GLOBAL, 8)).astype(np.float32))
"""

COMMON = DATA + r"""
import sys, json
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F, shardflow.optim as optim
import shardflow.distributed as dist
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed.checkpoint.state_dict import (
    get_optimizer_state_dict, get_state_dict, set_optimizer_state_dict, set_state_dict)
from shardflow.distributed.fsdp import fully_shard
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
CKPT = sys.argv[1]

def make():
    m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 8))
    m.load_state_dict({k: sf.tensor(v) for k, v in initial().items()})
    fully_shard(m[0]); fully_shard(m[2]); fully_shard(m)
    return m, optim.AdamW(m.parameters(), lr=0.01, weight_decay=0.1)

def run(m, opt, start, end):
    losses, rows = [], GLOBAL // W
    for step in range(start, end):
        X, Y = batch(step)
        loss = F.mse_loss(m(sf.tensor(X[r * rows:(r + 1) * rows])),
                          sf.tensor(Y[r * rows:(r + 1) * rows]))
        loss.backward(); opt.step(); opt.zero_grad()
        t = sf.tensor([loss.item() / W])
        dist.all_reduce(t)
        losses.append(float(t.numpy()[0]))
    return losses

def report(tag, value):  # rank 0 prints one JSON line the test reads
    if r == 0:
        print(tag, json.dumps(value), flush=True)

def layout(v):
    return [list(v.shape), list(v.array.shape), str(v.sbp) if v.is_global else None]
"""

# The save job: train to SAVE_AT, report the optimizer state's layout, save three ways,
# check that shard-shaped state is refused, train on to END. What it reports is checked
# by the tests below; the whole-tensor path comes last (StateDictOptions is new).
SAVE = COMMON + r"""
m, opt = make()
losses = run(m, opt, 0, SAVE_AT)

sd = opt.state_dict()
facts = {"adamw": {k: layout(v) for k, v in sd["state"][0].items()}}
# every optimizer's state, made the way a fresh optimizer's is (a step with lr 0)
for name, make_opt in (("sgd", lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)),
                       ("adagrad", lambda ps: optim.Adagrad(ps, lr=0.1)),
                       ("rmsprop", lambda ps: optim.RMSprop(ps, lr=0.1, momentum=0.9, centered=True)),
                       ("adadelta", lambda ps: optim.Adadelta(ps)),
                       ("adam", lambda ps: optim.Adam(ps, amsgrad=True))):
    other = make_opt(list(m.parameters()))
    get_optimizer_state_dict(m, other)
    facts[name] = {k: layout(v) for k, v in other.state_dict()["state"][2].items()}
facts["shares_memory"] = sd["state"][0]["exp_avg"].array is opt.state[m[0].weight]["exp_avg"].array
# 1. PyTorch's FSDP2 way: dcp.save of the optimizer's own (index-keyed) state dict
idx = dcp.save({"model": m.state_dict(), "optim": sd}, checkpoint_id=CKPT + "/idx")
e = idx["tensors"]["optim.state.0.exp_avg"]
facts["saved"] = [e["shape"], e["saved_as"]]
report("STATE", facts)
# 2. name-keyed (get_state_dict)
msd, osd = get_state_dict(m, opt)
dcp.save({"model": msd, "optim": osd}, checkpoint_id=CKPT + "/fqn")

# the state a rank held before the fix (plain shard-shaped tensors) must not load
before = {p: dict(st) for p, st in opt.state.items()}
old_style = {"state": {i: {k: sf.tensor(v.array.copy()) for k, v in st.items()}
                       for i, st in sd["state"].items()},
             "param_groups": [dict(g, lr=0.5) for g in sd["param_groups"]]}
refused = {}
try:
    opt.load_state_dict(old_style)
except ValueError as err:
    refused["load_state_dict"] = str(err)
try:
    set_optimizer_state_dict(m, opt, {"state": {"0.weight": {"exp_avg": sf.zeros(16, 16)}},
                                      "param_groups": osd["param_groups"]})
except ValueError as err:
    refused["set_optimizer_state_dict"] = str(err)
try:  # whole but plain: this rank would not know it holds rows, not the whole
    opt.load_state_dict({"state": {0: {"exp_avg": sf.zeros(32, 16)}},
                         "param_groups": sd["param_groups"]})
except ValueError as err:
    refused["whole_plain"] = str(err)
refused["unchanged"] = (all(opt.state.get(p, {}).get(k) is v for p, st in before.items()
                            for k, v in st.items())
                        and opt.param_groups[0]["lr"] == 0.01)
report("REFUSED", refused)

# 3. whole tensors in one file written by rank 0 (cpu_offload: the other ranks get {})
from shardflow.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
fm, fo = get_model_state_dict(m, options=opts), get_optimizer_state_dict(m, opt, options=opts)
if r == 0:
    v = fo["state"]["0.weight"]["exp_avg"]
    assert not v.is_global and v.array.shape == (32, 16)
    sf.save({"model": fm, "optim": fo}, CKPT + "/full.safetensors")
else:
    assert fm == {} and fo == {}

dist.barrier()
losses += run(m, opt, SAVE_AT, END)
report("CURVE", losses)
"""

# The resume job (a fresh process group): resume from each save, train SAVE_AT..END.
RESUME = COMMON + r"""
for how in ("idx", "fqn", "full"):
    m, opt = make()
    if how == "idx":  # the optimizer's own state dict as the target (its state made first)
        get_optimizer_state_dict(m, opt)
        state = {"model": m.state_dict(), "optim": opt.state_dict()}
        dcp.load(state, checkpoint_id=CKPT + "/idx")
        m.load_state_dict(state["model"]); opt.load_state_dict(state["optim"])
    elif how == "fqn":
        msd, osd = get_state_dict(m, opt)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=CKPT + "/fqn")
        set_state_dict(m, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    else:  # whole tensors from rank 0, laid out like the parameters on every rank
        from shardflow.distributed.checkpoint.state_dict import (
            StateDictOptions, set_model_state_dict)
        opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        ck = sf.load(CKPT + "/full.safetensors") if r == 0 else {"model": {}, "optim": {}}
        set_model_state_dict(m, ck["model"], options=opts)
        set_optimizer_state_dict(m, opt, ck["optim"], options=opts)
    report("RESUMED_" + how, run(m, opt, SAVE_AT, END))
"""


def _line(res, tag):
    """The JSON that rank 0 reported under ``tag`` (with the job's output if it is missing)."""
    for ln in res.stdout.splitlines():
        if ln.startswith(tag + " "):
            return json.loads(ln[len(tag) + 1:])
    raise AssertionError(f"{tag} was not reported; the job's output:\n{res.stdout}\n{res.stderr}")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The save job, then the resume job (each 2 ranks); their results, not yet checked."""
    path = str(tmp_path_factory.mktemp("fsdp_resume") / "ckpt")
    save = run_mpi(SAVE, n=2, timeout=180, args=(path,))
    return save, run_mpi(RESUME, n=2, timeout=180, args=(path,))


def test_state_dict_holds_global_whole_shaped_state(jobs):
    """``optimizer.state_dict()`` of a fully_shard model holds each moment of a (32, 16)
    weight as a global (32, 16) tensor ``S(0)`` whose local part is the (16, 16) shard the
    update works on (the same array, no copy); ``dcp.save`` of it records the whole
    tensor. Before: plain (16, 16) tensors, saved as "replicated" from one rank."""
    facts = _line(jobs[0], "STATE")
    assert facts["adamw"]["exp_avg"] == [[32, 16], [16, 16], "(S(0),)"], facts["adamw"]
    assert facts["adamw"]["exp_avg_sq"] == [[32, 16], [16, 16], "(S(0),)"]
    assert facts["adamw"]["step"] == [[], [], None]  # a local scalar, as PyTorch's
    assert facts["shares_memory"]
    assert facts["saved"] == [[32, 16], {"placement": [0, 1], "sbp": ["S(0)"]}]
    whole = [[8, 32], [4, 32], "(S(0),)"]  # the second Linear's weight
    assert facts["sgd"] == {"momentum_buffer": whole}
    assert facts["adagrad"]["sum"] == whole
    assert {k: v for k, v in facts["rmsprop"].items() if k != "step"} == {
        "square_avg": whole, "momentum_buffer": whole, "grad_avg": whole}
    assert facts["adadelta"]["square_avg"] == facts["adadelta"]["acc_delta"] == whole
    assert facts["adam"]["max_exp_avg_sq"] == whole


def test_shard_shaped_state_is_refused_before_anything_changes(jobs):
    """Loading the plain shard-shaped state of before the fix raises a ValueError naming the
    state key, both shapes and the fix, and leaves the optimizer as it was. PyTorch accepts
    it and fails in ``step`` ("The size of tensor a (16) must match ...")."""
    refused = _line(jobs[0], "REFUSED")
    msg = refused.get("load_state_dict", "accepted")
    assert ("state 'exp_avg' of parameter 0 has shape (16, 16), but the parameter has shape "
            "(32, 16)") in msg, msg
    assert "nothing was loaded" in msg and "dcp.save" in msg, msg
    assert ("state 'exp_avg' of parameter '0.weight' has shape (16, 16)"
            in refused.get("set_optimizer_state_dict", "accepted")), refused
    assert ("state 'exp_avg' of parameter 0: it is a plain tensor, the parameter a global tensor "
            "laid out as (S(0),) (this rank holds (16, 16) of it)" in refused.get("whole_plain", "")), refused
    assert refused["unchanged"]


def test_fsdp_resume_continues_the_uninterrupted_run(jobs):
    """Resumed from each of the three saves in a fresh job, the losses equal the
    uninterrupted run's step by step (before: the index-keyed DCP resume was off by 1.8e-2
    at its second step, rank 1's moments being rank 0's), and the uninterrupted run equals
    PyTorch's."""
    ns: dict = {}
    exec(DATA, ns)
    torch_curve, at = _torch_curve(ns), ns["SAVE_AT"]
    resumed = {}
    for how in ("idx", "fqn", "full"):
        resumed[how] = _line(jobs[1], "RESUMED_" + how)
        np.testing.assert_allclose(resumed[how], torch_curve[at:], rtol=1e-5, err_msg=how)
    full = _line(jobs[0].check(), "CURVE")
    np.testing.assert_allclose(full, torch_curve, rtol=1e-5)
    for how, curve in resumed.items():  # the same shards and state: the same numbers
        np.testing.assert_allclose(curve, full[at:], rtol=1e-6, err_msg=how)
    jobs[1].check()


def _torch_curve(ns) -> list[float]:
    """PyTorch's AdamW on the whole batch: what 2-rank FSDP computes."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 8))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in ns["initial"]().items()})
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    losses = []
    for step in range(ns["END"]):
        X, Y = (torch.from_numpy(a) for a in ns["batch"](step))
        loss = torch.nn.functional.mse_loss(model(X), Y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses
