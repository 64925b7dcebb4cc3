"""`shardflow run -n 2 ... train gpt`: DDP over two real ranks; only rank 0 writes."""

import os
import subprocess
import sys

import pytest

import shardflow as sf

pytestmark = pytest.mark.mpi


def test_train_gpt_on_two_ranks(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    out = tmp_path / "out"
    # `shardflow run -n 2 shardflow train gpt ...`, the documented form
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", "2", "shardflow", "train", "gpt", "--data", str(corpus), "--out", str(out), "--max-steps", "4",
           "--n-layer", "1", "--n-embd", "16", "--n-head", "2", "--block-size", "16", "--batch-size",
           "4", "--eval-iters", "1", "--sample-tokens", "5", "--no-progress", "--num-workers", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "world size 2" in r.stdout
    assert "[rank 1]" not in r.stdout  # only rank 0 prints
    assert sorted(os.listdir(out)) == ["ckpt_0000004.safetensors", "loss.png", "metrics.csv"]
    assert sf.load(out / "ckpt_0000004.safetensors")["step"] == 4
