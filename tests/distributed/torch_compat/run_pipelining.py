"""Rank program (2 ranks): PyTorch's pipelining usage (``pipeline_program.py``) on torch and,
with only the imports changed, on shardflow, from the same weights and data: the last stage's
micro-batch losses and every stage parameter's gradient agree, for pipeline() with GPipe, 1F1B
and interleaved 1F1B (4 stages on 2 ranks), and for the manual split built on the meta device."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import close, init_pair  # noqa: E402

r, n = init_pair()

import torch  # noqa: E402

import shardflow as sf  # noqa: E402
from shardflow.testing.parity import load_torch_file  # noqa: E402

HERE = Path(__file__).parent
TP = load_torch_file(HERE / "pipeline_program.py", use_shardflow=False, name="pp_program_torch")
SP = load_torch_file(HERE / "pipeline_program.py", use_shardflow=True, name="pp_program_sf")
torch.set_num_threads(1)

rng = np.random.default_rng(0)
X = rng.standard_normal((8, 6)).astype(np.float32)
Y = rng.integers(0, 10, 8)


def same_model(build):
    torch.manual_seed(0)
    tm = build(TP)
    sm = build(SP)
    sm.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, sm


def compare(t_stages, s_stages, t_losses, s_losses, what):
    if r == n - 1:
        assert len(s_losses) == len(t_losses) == 4, what
        close([v.item() for v in s_losses], [v.item() for v in t_losses], f"{what} losses", 1e-5)
    for ts, ss in zip(t_stages, s_stages):
        tp = dict(ts.submod.named_parameters())
        sp = dict(ss.submod.named_parameters())
        assert list(tp) == list(sp), (what, list(tp), list(sp))
        for k in tp:
            close(sp[k].grad.numpy(), tp[k].grad.numpy(), f"{what} grad {k}", 1e-5)


def build(lib):
    return lib.MyNetwork(6, [8, 8, 8, 8])


for sched in ("ScheduleGPipe", "Schedule1F1B"):
    tm, sm = same_model(build)
    t_st, t_l = TP.split_and_step(tm, torch.tensor(X), torch.tensor(Y), r, n,
                                  {"layer2": TP.SplitPoint.BEGINNING},
                                  getattr(TP.torch.distributed.pipelining, sched))
    s_st, s_l = SP.split_and_step(sm, sf.tensor(X), sf.tensor(Y), r, n,
                                  {"layer2": SP.SplitPoint.BEGINNING},
                                  getattr(SP.torch.distributed.pipelining, sched))
    compare(t_st, s_st, t_l, s_l, sched)

# interleaved 1F1B: 4 stages, stages r and r + 2 on rank r
spec = {"layer1": "BEGINNING", "layer2": "BEGINNING", "layer3": "BEGINNING"}
tm, sm = same_model(build)
t_st, t_l = TP.split_and_step(tm, torch.tensor(X), torch.tensor(Y), r, n,
                              {k: TP.SplitPoint[v] for k, v in spec.items()},
                              TP.torch.distributed.pipelining.ScheduleInterleaved1F1B)
s_st, s_l = SP.split_and_step(sm, sf.tensor(X), sf.tensor(Y), r, n,
                              {k: SP.SplitPoint[v] for k, v in spec.items()},
                              SP.torch.distributed.pipelining.ScheduleInterleaved1F1B)
if r == 0:
    t_l = s_l = None
compare(t_st, s_st, t_l, s_l, "interleaved")

# the manual split, built on the meta device and materialised with to_empty
torch.manual_seed(1)
full = TP.Transformer()
state = {k: v.detach().clone() for k, v in full.state_dict().items()}
TOK = rng.integers(0, 16, (8, 5))


def t_load(model):
    model.load_state_dict({k: v for k, v in state.items() if k in model.state_dict()})


def s_load(model):
    mine = model.state_dict()
    model.load_state_dict({k: sf.tensor(v.numpy()) for k, v in state.items() if k in mine})


t_stage, s_stage = TP.manual_stage(r, n, t_load), SP.manual_stage(r, n, s_load)
assert not any(p.is_meta for p in s_stage.submod.parameters())
t_sched = TP.torch.distributed.pipelining.Schedule1F1B(t_stage, 4, loss_fn=TP.lm_loss)
s_sched = SP.torch.distributed.pipelining.Schedule1F1B(s_stage, 4, loss_fn=SP.lm_loss)
t_l, s_l = ([], []) if r == n - 1 else (None, None)
if r == 0:
    t_sched.step(torch.tensor(TOK))
    s_sched.step(sf.tensor(TOK))
else:
    t_sched.step(target=torch.tensor(TOK), losses=t_l)
    s_sched.step(target=sf.tensor(TOK), losses=s_l)
compare([t_stage], [s_stage], t_l, s_l, "manual split from meta")

print("PIPELINING OK", r, flush=True)
