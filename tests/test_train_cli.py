"""`shardflow train`: exact resumption, killed runs, config refusal, image tasks."""

import gzip
import os
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import shardflow as sf
from shardflow import checkpoint
from shardflow.cli.train import main

SRC = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n" for i in range(200))


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.py").write_text(SRC)
    (d / "b.py").write_text(SRC[::-1])
    return str(d)


def tiny(corpus, out, *extra):
    return ["gpt", "--data", corpus, "--out", str(out), "--n-layer", "1", "--n-head", "2",
            "--n-embd", "16", "--block-size", "16", "--batch-size", "4", "--eval-iters", "2",
            "--eval-interval", "4", "--ckpt-interval", "2", "--log-interval", "1", "--sample-tokens",
            "5", "--no-progress", "--warmup-steps", "2", "--dropout", "0.1", "--lr-decay-steps", "12",
            "--keep-checkpoints", "100", *extra]


def final_state(out, step):
    return sf.load(os.path.join(out, f"ckpt_{step:07d}.safetensors"))


def assert_identical(a, b):
    assert a["step"] == b["step"]
    for k in a["model"]:
        np.testing.assert_array_equal(a["model"][k].numpy(), b["model"][k].numpy(), err_msg=k)
    for pid, st in a["optimizer"]["state"].items():
        for k, v in st.items():
            if isinstance(v, sf.Tensor):
                np.testing.assert_array_equal(v.numpy(), b["optimizer"]["state"][pid][k].numpy())
    np.testing.assert_array_equal(a["rng"], b["rng"])


@pytest.mark.parametrize("workers", ["0", "1"])
def test_resume_gives_identical_parameters(corpus, tmp_path, workers):
    full, part = tmp_path / "full", tmp_path / "part"
    assert main(tiny(corpus, full, "--max-steps", "8", "--num-workers", workers)) == 0
    assert main(tiny(corpus, part, "--max-steps", "4", "--num-workers", workers)) == 0  # stops at 4
    assert main(tiny(corpus, part, "--max-steps", "8", "--num-workers", workers, "--resume")) == 0
    assert_identical(final_state(str(full), 8), final_state(str(part), 8))
    first = final_state(str(full), 2)["model"]
    last = final_state(str(full), 8)["model"]
    assert any(not np.array_equal(first[k].numpy(), last[k].numpy()) for k in first)  # it trained
    rows = open(part / "metrics.csv").read().splitlines()
    steps = [int(r.split(",")[0]) for r in rows[1:] if r.split(",")[1]]
    assert steps == list(range(1, 9))  # the resumed CSV continues without gaps or repeats


def test_killed_run_resumes_on_the_same_trajectory(corpus, tmp_path):
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    assert main(tiny(corpus, ref, "--max-steps", "12")) == 0
    code = f"from shardflow.cli.train import main; main({tiny(corpus, killed, '--max-steps', '100000')!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while checkpoint.find_latest(killed) is None and time.time() < deadline:
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)  # no chance to clean up
        proc.wait()
    latest = checkpoint.find_latest(killed)
    assert latest is not None
    k = sf.load(latest)["step"]
    assert k < 12, "the killed run got too far for this test; it ran past step 12 before the kill"
    assert main(tiny(corpus, killed, "--max-steps", "12", "--resume")) == 0
    assert_identical(final_state(str(ref), 12), final_state(str(killed), 12))


@pytest.mark.parametrize("args,needle", [
    (["--batch-size", "-1"], "--batch-size: got -1; fix: use a positive integer"),
    (["--n-embd", "30", "--n-head", "4"], "--n-embd: got 30; fix: make it a multiple of --n-head (4)"),
    (["--lr", "0"], "--lr: got 0.0"),
    (["--data", "/no/such/folder"], "--data: got '/no/such/folder'; fix: give an existing folder"),
    (["--min-lr", "1", "--lr", "0.1"], "--min-lr"),
])
def test_impossible_configs_refused_at_start(tmp_path, capsys, args, needle):
    assert main(["gpt", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert not (tmp_path / "o").exists()  # refused before anything ran


def test_yaml_config_and_unknown_keys(corpus, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("batch_size: 4\nlearning_rate: 0.1\n")
    assert main(["gpt", "--config", str(bad)]) == 2
    assert "unknown option 'learning_rate'" in capsys.readouterr().err
    good = tmp_path / "good.yaml"
    good.write_text("max_steps: 3\nn_layer: 1\nn_embd: 16\nn_head: 2\nblock_size: 8\nbatch_size: 2\n"
                    f"eval_iters: 1\nsample_tokens: 3\nprogress: false\ndata: {corpus}\n"
                    f"out: {tmp_path / 'y'}\n")
    assert main(["gpt", "--config", str(good), "--max-steps", "2"]) == 0  # flags beat the file
    assert final_state(str(tmp_path / "y"), 2)["config"]["n_embd"] == 16
    assert not os.path.exists(tmp_path / "y" / "ckpt_0000003.safetensors")


def _idx(path, arr):
    code = 0x08
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes())


def test_train_mnist_on_tiny_idx_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for split, n in (("train", 64), ("t10k", 32)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        imgs = (labels[:, None, None] * 25 + rng.integers(0, 5, (n, 28, 28))).astype(np.uint8)
        _idx(str(tmp_path / f"{split}-images-idx3-ubyte.gz"), imgs)
        _idx(str(tmp_path / f"{split}-labels-idx1-ubyte.gz"), labels)
    out = tmp_path / "run"
    rc = main(["mnist", "--data", str(tmp_path), "--out", str(out), "--max-steps", "6", "--batch-size", "16",
               "--eval-iters", "1", "--no-progress", "--num-workers", "0"])
    assert rc == 0
    assert (out / "metrics.csv").exists() and checkpoint.find_latest(out)
    assert "predictions:" in capsys.readouterr().out
    assert main(["mnist", "--data", str(tmp_path), "--out", str(out), "--batch-size", "100"]) == 2
    assert "training set has only 64 samples" in capsys.readouterr().err
    assert main(["mnist", "--out", str(out)]) == 2 or os.environ.get("SHARDFLOW_DATA")
