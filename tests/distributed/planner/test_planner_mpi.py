"""The planner against real ranks: the collectives it predicts for global-tensor layouts are
the ones ``comm_plan()`` records; ``parallelize(layout="auto")`` and ``shardflow train gpt
--layout auto`` run end to end on 2 ranks (the auto-laid-out run equals one process)."""

import json
import re
import subprocess
import sys

import pytest

from shardflow.testing.mpi import run_mpi

from .profiles import realistic

pytestmark = pytest.mark.mpi

COMM_PLAN = r"""
from collections import Counter
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
from shardflow.distributed import comm_plan
from shardflow.distributed.planner import Layout
from shardflow.distributed.planner.auto import lm_spec
from shardflow.distributed.planner.cost import predicted_comm_plan
from shardflow.distributed.tensor_parallel import data_tensor_parallel
from shardflow.models.gpt import GPT, GPTConfig

dist.init_process_group()
cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=2, n_embd=16)
for dp, tp in ((2, 1), (1, 2)):
    sf.manual_seed(0)
    m = GPT(cfg)
    want = predicted_comm_plan(lm_spec(m, 4, entry="parallelize"), Layout(dp=dp, tp=tp))
    mesh, dsbp = data_tensor_parallel(m, dp, tp, m.tensor_parallel_plan())
    g = np.random.default_rng(1)
    x, y = sf.tensor(g.integers(0, 32, (4, 8))), sf.tensor(g.integers(0, 32, (4, 8)))
    whole = [dist.sbp.broadcast] * 2
    with comm_plan() as plan:
        _, loss = m(x.to_global(mesh, whole).to_global(sbp=dsbp), y.to_global(mesh, whole).to_global(sbp=dsbp))
        loss.backward()
    got = Counter((e.phase, e.collective, e.nbytes, e.group_size) for e in plan.entries)
    assert got == Counter(want), (dp, tp, sorted(got.items()), sorted(Counter(want).items()))
    print("PLAN", dp, tp, "OK", len(plan.entries), flush=True)
"""




AUTO = r"""
import sys
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
from shardflow.models.gpt import GPT, GPTConfig
from shardflow.models.gpt_pipeline import gpt_loss, gpt_pipe
dist.init_process_group()
cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=2, n_embd=16)

def build():
    sf.manual_seed(0)
    m = GPT(cfg)
    return m, sf.optim.AdamW(m.parameters(), lr=1e-2)

def data(step):
    g = np.random.default_rng(50 + step)
    return sf.tensor(g.integers(0, 32, (8, 8))), sf.tensor(g.integers(0, 32, (8, 8)))

ref, opt = build()
ref_losses = []
for step in range(6):
    x, y = data(step)
    opt.zero_grad()
    _, loss = ref(x, y)
    loss.backward()
    opt.step()
    ref_losses.append(loss.item())
model, opt = build()
par = sf.parallelize(model, opt, layout="auto", profile=sys.argv[1], batch_size=8, split=gpt_pipe,
                     loss_fn=lambda out, t: gpt_loss(out[0] if isinstance(out, tuple) else out, t))
losses = [par.step(*data(step)) for step in range(6)]
d = max(abs(a - b) for a, b in zip(losses, ref_losses))
assert d < 1e-5, (losses, ref_losses)
print("AUTO", par.dp, par.tp, par.pp, par.zero, "OK", flush=True)
"""


@pytest.fixture(scope="module")
def planner_job(tmp_path_factory):
    """One 2-rank launch that runs COMM_PLAN, then AUTO (its second init_process_group left
    out): two launches' start-up for one. Each test reads its own lines ("PLAN ... OK" /
    "AUTO ... OK") from the output."""
    prof = tmp_path_factory.mktemp("planner") / "profile.json"
    prof.write_text(json.dumps(realistic().data))
    code = COMM_PLAN + AUTO.replace("dist.init_process_group()\n", "", 1)
    return run_mpi(code, n=2, timeout=440, args=[str(prof)], env={"SHARDFLOW_COMM_TIMEOUT": "60"})


def test_predicted_collectives_are_what_comm_plan_records(planner_job):
    out = planner_job.output
    assert not planner_job.timed_out, out
    # each rank prints one per layout once its assert passed: 2 layouts x 2 ranks
    assert len(re.findall(r"PLAN \d \d OK", out)) == 4, out


def test_parallelize_layout_auto_on_two_ranks(planner_job):
    out = planner_job.check().output
    assert len(re.findall(r"AUTO \S+ \S+ \S+ \S+ OK", out)) == 2, out  # one per rank
    assert "layout='auto' on 2 rank(s)" in out and "winner:" in out
    assert out.count("planner check") == 1, out  # rank 0 only, after five steps
    assert "step time predicted" in out and "MiB, measured" in out


FLAGS = ["--max-steps", "6", "--n-layer", "2", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "100", "--log-interval", "3",
         "--ckpt-interval", "100", "--sample-tokens", "5", "--no-progress", "--num-workers", "0",
         "--max-corpus-bytes", "20000"]


def test_train_layout_auto_on_two_ranks(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(realistic().data))
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", "2", "shardflow", "train", "gpt",
           "--layout", "auto", "--plan-profile", str(prof), "--data", str(corpus), "--out", str(tmp_path / "o"),
           *FLAGS]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--layout auto on 2 rank(s)" in r.stdout and "chosen: dp" in r.stdout
    assert r.stdout.count("planner check (") == 1 and "step time predicted" in r.stdout  # rank 0 only
    assert r.stdout.count("planner check: model states on this rank measured") == 1
    assert "final val loss" in r.stdout
