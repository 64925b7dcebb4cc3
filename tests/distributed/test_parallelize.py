"""``shardflow.parallelize``: validation before launch, the printed plan, and dp x tp x pp
layouts of GPT-mini against one process (losses over three AdamW steps, 1e-5), 1x2x2 and
2x1x2 included (gradients and parameters of every layout: test_pipeline_tp.py)."""

import re

import pytest

from shardflow.testing.mpi import run_mpi

SCRIPT = r"""
import sys
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
from shardflow.models.gpt import GPT, GPTConfig
from shardflow.models.gpt_pipeline import gpt_pipe, gpt_loss
dist.init_process_group()
cfg = GPTConfig(block_size=8, vocab_size=32, n_layer=4, n_head=2, n_embd=16)

def build():
    sf.manual_seed(0)
    m = GPT(cfg)
    return m, sf.optim.AdamW(m.parameters(), lr=1e-2)

def data(step):
    g = np.random.default_rng(50 + step)
    return sf.tensor(g.integers(0, 32, (8, 8))), sf.tensor(g.integers(0, 32, (8, 8)))

ref, opt = build()
ref_losses = []
for step in range(3):
    x, y = data(step)
    opt.zero_grad()
    _, loss = ref(x, y)
    loss.backward()
    opt.step()
    ref_losses.append(loss.item())

for layout in sys.argv[1:]:
    shape, _, z = layout.partition("z")
    dp, tp, pp = (int(v) for v in shape.split("x"))
    model, opt = build()
    par = sf.parallelize(model, opt, dp=dp, tp=tp, pp=pp, zero=int(z or 0), batch_size=8, split=gpt_pipe,
                         loss_fn=gpt_loss if pp > 1 else (lambda out, y: gpt_loss(out[0], y)))
    losses = [par.step(*data(step)) for step in range(3)]
    d = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert d < 1e-5, (layout, losses, ref_losses)
    print("LAYOUT", layout, "OK", d, flush=True)
"""


@pytest.mark.mpi
def test_parallelize_layouts_on_two_ranks_equal_one_process():
    res = run_mpi(SCRIPT, n=2, timeout=120, args=["1x1x2", "1x2x1", "2x1x1", "2x1x1z1"],
                  env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()
    assert res.output.count("OK") == 8, res.output  # 4 layouts x 2 ranks
    assert "parallel plan: dp=1 x tp=1 x pp=2" in res.output
    assert re.search(r"pp: 2 stages of 2 layers; per step 4 micro-batches", res.output)
    assert "zero-1: optimizer state Split(0) over 2 ranks" in res.output
    assert "tp: Megatron layout over 2 ranks: 2 all-reduces" in res.output


@pytest.mark.mpi
def test_parallelize_dp2_pp2_and_tp2_pp2_on_four_ranks_equal_one_process():
    res = run_mpi(SCRIPT, n=4, timeout=120, args=["2x1x2", "1x2x2"],
                  env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()
    assert res.output.count("OK") == 8, res.output  # 2 layouts x 4 ranks
    assert "tp: Megatron layout over the 2 ranks of each stage (sub-mesh mesh['tp'])" in res.output


def test_validation_errors_name_the_fix():
    from shardflow.distributed.parallel_config import validate_parallel_config as v

    with pytest.raises(ValueError, match=r"dp x tp x pp = 2 x 1 x 2 = 4, but the job has 2"):
        v(2, dp=2, pp=2)
    with pytest.raises(ValueError, match=r"pp=3 does not divide the model's 4 layers; choose pp among \[1, 2, 4\]"):
        v(3, pp=3, n_layer=4)
    with pytest.raises(ValueError, match=r"tp=4 does not divide the model's 2 attention heads"):
        v(4, tp=4, n_head=2)
    with pytest.raises(ValueError, match=r"global batch of 6 does not split into dp=2 replicas x 2"):
        v(2, dp=2, batch_size=6, n_microbatches=2)
    with pytest.raises(NotImplementedError, match="zero with dp only"):
        v(4, dp=2, pp=2, zero=1)
    with pytest.raises(NotImplementedError, match="zero with dp only"):
        v(4, tp=2, pp=2, zero=1)
    v(4, dp=2, pp=2, n_layer=4, n_head=2, batch_size=8, n_microbatches=2)  # valid
    v(4, tp=2, pp=2, n_layer=4, n_head=2, batch_size=8, n_microbatches=4)  # valid: TP inside stages
    v(8, dp=2, tp=2, pp=2, n_layer=4, n_head=2, batch_size=8, n_microbatches=4)


def test_tp_without_a_plan_is_refused_before_any_layout():
    import shardflow as sf
    from shardflow import nn

    m = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))  # no tensor_parallel_plan()
    with pytest.raises(ValueError, match=r"tp=2 needs a tensor-parallel plan.*pass plan="):
        sf.parallelize(m, sf.optim.SGD(m.parameters(), lr=0.1), tp=2, loss_fn=lambda o, y: o.sum())
    assert all(p._spec is None for p in m.parameters())


def test_one_process_plan_and_step(capsys):
    import numpy as np

    import shardflow as sf
    from shardflow.models.gpt import GPT, GPTConfig
    from shardflow.models.gpt_pipeline import gpt_loss

    sf.manual_seed(0)
    m = GPT(GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=2, n_embd=16))
    par = sf.parallelize(m, sf.optim.SGD(m.parameters(), lr=0.1), loss_fn=lambda o, y: gpt_loss(o[0], y))
    assert "one process: no communication" in capsys.readouterr().out
    g = np.random.default_rng(0)
    x, y = sf.tensor(g.integers(0, 32, (4, 8))), sf.tensor(g.integers(0, 32, (4, 8)))
    first = par.step(x, y)
    assert par.step(x, y) < first
