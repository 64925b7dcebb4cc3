"""`shardflow train gpt --tp 2` (global tensors, Megatron's split) trains exactly like one
process; its checkpoints hold whole tensors (they resume on one rank), and a --dp x --tp that
does not match the world size is refused before anything is built."""

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
    return [float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]]


def _run(n, *args):
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", str(n), "shardflow", "train", "gpt", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def test_train_gpt_tensor_parallel_equals_one_rank(tmp_path, capsys):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    tp, one = tmp_path / "tp", tmp_path / "one"
    r = _run(2, "--tp", "2", "--data", str(corpus), "--out", str(tp), *FLAGS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "global tensors: dp 1 x tp 2" in r.stdout
    assert (tp / "loss.png").exists() and "--- sample" in r.stdout
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    (t2, v2), (t1, v1) = _losses(tp / "metrics.csv"), _losses(one / "metrics.csv")
    assert len(t2) == 4
    np.testing.assert_allclose(t2, t1, rtol=0, atol=2e-5)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=2e-5)
    s2, s1 = sf.load(tp / "ckpt_0000004.safetensors"), sf.load(one / "ckpt_0000004.safetensors")
    for k in s1["model"]:  # whole tensors, equal to one process's
        assert s2["model"][k].shape == s1["model"][k].shape, k
        np.testing.assert_allclose(s2["model"][k].numpy(), s1["model"][k].numpy(), atol=2e-5, err_msg=k)

    # the tensor-parallel checkpoint resumes on one rank and continues the same trajectory
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    (resumed / "ckpt_0000002.safetensors").write_bytes((tp / "ckpt_0000002.safetensors").read_bytes())
    assert main(["gpt", "--data", str(corpus), "--out", str(resumed), "--resume", *FLAGS]) == 0
    capsys.readouterr()
    s3 = sf.load(resumed / "ckpt_0000004.safetensors")
    for k in s1["model"]:
        np.testing.assert_allclose(s3["model"][k].numpy(), s1["model"][k].numpy(), atol=5e-5, err_msg=k)


def test_dp_times_tp_must_match_the_world_before_anything_is_built(tmp_path):
    r = _run(2, "--dp", "2", "--tp", "2", "--out", str(tmp_path / "x"), *FLAGS)
    assert r.returncode != 0
    assert "--dp 2 x --tp 2 = 4, but this job has 2 rank(s)" in r.stdout + r.stderr
    assert not (tmp_path / "x").exists()
