"""`shardflow run -n 2 shardflow train gpt`: DDP over two real ranks trains exactly like one
process (same flags: --batch-size is the global batch), only rank 0 writes, and a
checkpoint saved on 2 ranks resumes on 1."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import shardflow as sf
from shardflow.cli.train import main

pytestmark = pytest.mark.mpi

FLAGS = ["--max-steps", "4", "--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "2", "--log-interval", "1",
         "--ckpt-interval", "2", "--keep-checkpoints", "10", "--sample-tokens", "5", "--no-progress",
         "--num-workers", "0", "--max-corpus-bytes", "20000"]


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return ([float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]])


def _assert_same_model(a, b, tol=2e-5):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=tol, atol=tol, err_msg=k)


def test_train_gpt_on_two_ranks_equals_one_rank(tmp_path, capsys):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    two, one = tmp_path / "two", tmp_path / "one"
    # `shardflow run -n 2 shardflow train gpt ...`, the documented form
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", "2", "shardflow", "train", "gpt",
           "--data", str(corpus), "--out", str(two), *FLAGS]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "world size 2 (4 of each batch of 8 per rank)" in r.stdout
    assert "[rank 1]" not in r.stdout  # only rank 0 prints
    assert sorted(os.listdir(two)) == ["ckpt_0000002.safetensors", "ckpt_0000004.safetensors",
                                       "loss.png", "metrics.csv"]
    assert (two / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    train2, val2 = _losses(two / "metrics.csv")
    train1, val1 = _losses(one / "metrics.csv")
    assert len(train2) == 4 and len(val2) == 3
    np.testing.assert_allclose(train2, train1, rtol=0, atol=2e-5)  # the global batch's loss
    np.testing.assert_allclose(val2, val1, rtol=0, atol=2e-5)
    s2, s1 = sf.load(two / "ckpt_0000004.safetensors"), sf.load(one / "ckpt_0000004.safetensors")
    assert s2["step"] == s1["step"] == 4 and s2["world_size"] == 2 and s1["world_size"] == 1
    _assert_same_model(s2["model"], s1["model"])
    first = sf.load(two / "ckpt_0000002.safetensors")["model"]
    assert any(not np.allclose(first[k].numpy(), s2["model"][k].numpy()) for k in first)  # it trained

    # a checkpoint saved on 2 ranks resumes on 1, says so, and continues on the same trajectory
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    shutil.copy(two / "ckpt_0000002.safetensors", resumed)
    assert main(["gpt", "--data", str(corpus), "--out", str(resumed), "--resume", *FLAGS]) == 0
    printed = capsys.readouterr().out
    assert ("was saved by a run on 2 rank(s), this run has 1; --batch-size 8 is the global batch"
            in printed), printed
    _assert_same_model(sf.load(resumed / "ckpt_0000004.safetensors")["model"], s2["model"])


def test_compiled_train_on_two_ranks_equals_eager_one_rank(tmp_path, capsys):
    """``--compile``: forward and backward through compile_step, DDP's buckets all-reduced
    from the compiled backward; the run tracks the eager one-process run."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    two, one = tmp_path / "two", tmp_path / "one"
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", "2", "shardflow", "train", "gpt",
           "--data", str(corpus), "--out", str(two), "--compile", *FLAGS]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compile: compiled step for inputs (4, 16), (4, 16)" in r.stdout, r.stdout
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    train2, val2 = _losses(two / "metrics.csv")
    train1, val1 = _losses(one / "metrics.csv")
    assert len(train2) == 4
    np.testing.assert_allclose(train2, train1, rtol=0, atol=2e-5)
    np.testing.assert_allclose(val2, val1, rtol=0, atol=2e-5)
    _assert_same_model(sf.load(two / "ckpt_0000004.safetensors")["model"],
                       sf.load(one / "ckpt_0000004.safetensors")["model"])
