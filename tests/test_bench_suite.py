"""``shardflow bench suite``: the model twins agree, FLOP counts match the analytic ones,
derived figures (speedup, efficiency, OOM cells), and a tiny end-to-end run writing the
Markdown table, the JSON and both plots."""

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.bench import suite_report
from shardflow.bench.suite_models import flops_per_sample, suite_models
from shardflow.bench.workloads import _mlp_flops
from shardflow.comm.launcher import rank_env


@pytest.mark.parametrize("quick", [True, False])
def test_twins_have_the_same_parameters_and_mlp_flops_match(quick):
    for spec in suite_models(quick).values():
        a = [tuple(p.shape) for p in spec.build(sf).parameters()]
        b = [tuple(p.shape) for p in spec.build(torch).parameters()]
        assert a == b, spec.key
    mlp = suite_models(quick)["mlp"]
    x = torch.zeros(4, 784)
    assert flops_per_sample(torch, mlp.build(torch), mlp, x) == _mlp_flops(1)


def _row(model, fw, ranks, step_s, err=None):
    return {"model": model, "title": model.upper(), "framework": fw, "ranks": ranks,
            "batch_per_rank": 10, "tokens_per_sample": 0, "error": err, "step_s": step_s,
            "steps_s": [step_s], "flops_per_sample": 1e6, "memory_bytes": 2**20}


def test_derived_figures_and_oom_cells():
    configs = [{"ranks": 1, "gemm_gflops_per_rank": [1.0], "steps": 7, "warmup": 2,
                "rows": [_row("m", "shardflow", 1, 0.1), _row("m", "torch", 1, 0.05)]},
               {"ranks": 2, "gemm_gflops_per_rank": [1.0, 1.0],
                "rows": [_row("m", "shardflow", 2, 0.125), _row("m", "torch", 2, None, "OOM")]}]
    rows = {(r["framework"], r["ranks"]): r for r in suite_report.derive(configs)}
    two = rows[("shardflow", 2)]
    assert two["throughput"] == pytest.approx(2 * 10 / 0.125)  # 160 samples/s
    assert two["speedup"] == pytest.approx(160 / 100) and two["efficiency"] == pytest.approx(0.8)
    assert rows[("shardflow", 1)]["vs_torch"] == pytest.approx(100 / 200)
    assert rows[("shardflow", 1)]["mfu"] == pytest.approx(1e6 * 100 / 1e9)
    md = suite_report.markdown(list(rows.values()), configs, SimpleNamespace(quick=True), 3.0)
    oom = next(ln for ln in md.splitlines() if "| torch | 2 |" in ln)
    assert oom.count("OOM") >= 4 and "- M torch x2: OOM" in md


@pytest.mark.mpi
def test_suite_end_to_end_writes_table_json_and_plots(tmp_path):
    out = tmp_path / "suite"
    p = subprocess.run([sys.executable, "-m", "shardflow", "bench", "suite", "--quick",
                        "--models", "lenet", "--ranks", "1,2", "--steps", "2", "--warmup", "1",
                        "--out", str(out)], env=rank_env(), capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((out / "suite.json").read_text())
    rows = doc["rows"]
    assert {(r["framework"], r["ranks"]) for r in rows} == {
        ("shardflow", 1), ("shardflow", 2), ("torch", 1), ("torch", 2)}
    for r in rows:
        assert r["error"] is None
        assert r["throughput"] == pytest.approx(r["ranks"] * 64 / r["step_s"])
        assert r["step_s"] == pytest.approx(float(np.median(r["steps_s"])))
    table = (out / "suite.md").read_text()
    assert table.count("| LeNet-5 1x32x32 |") == 4 and "Environment:" in table
    for png in ("throughput.png", "scaling.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
