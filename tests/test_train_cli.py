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
    (["--device", "tpu"], "--device: got 'tpu'; fix: use cpu or cuda"),
    (["--compile", "--tp", "2"], "--compile: got True; fix: compile_step covers one process"),
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


def _all_finite(state):
    return all(np.isfinite(v.numpy()).all() for v in state["model"].values())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy overflow in the diverging model
def test_divergence_stops_at_the_step_and_keeps_a_finite_checkpoint(corpus, tmp_path, capsys):
    out = tmp_path / "lr1e6"
    rc = main(tiny(corpus, out, "--max-steps", "30", "--lr", "1e6", "--ckpt-interval", "1",
                   "--keep-checkpoints", "1", "--dropout", "0", "--num-workers", "0"))
    cap = capsys.readouterr()
    assert rc == 1, cap.err
    assert "the training loss or gradient became non-finite at step " in cap.err
    step = int(cap.err.split("non-finite at step ")[1].split(" ")[0])
    assert "--on-nonfinite skip" in cap.err and "lower --lr (now 1e+06)" in cap.err
    ckpts = sorted(f for f in os.listdir(out) if f.startswith("ckpt_"))
    assert ckpts == [f"ckpt_{step - 1:07d}.safetensors"]  # the last one before the bad step
    assert f"Last checkpoint with finite parameters: {out / ckpts[0]}" in cap.err
    assert _all_finite(sf.load(out / ckpts[0]))
    assert "--- sample" not in cap.out  # no demo on a diverged model


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy overflow in the diverging model
def test_skip_mode_skips_non_finite_updates_then_stops_after_too_many(corpus, tmp_path, capsys):
    out = tmp_path / "skip"
    rc = main(tiny(corpus, out, "--max-steps", "40", "--lr", "1e6", "--ckpt-interval", "1",
                   "--keep-checkpoints", "2", "--dropout", "0", "--num-workers", "0",
                   "--on-nonfinite", "skip", "--max-consecutive-skips", "3"))
    cap = capsys.readouterr()
    assert rc == 1, cap.err
    first = int(cap.err.split("(steps ")[1].split("..")[0])
    assert f"3 steps in a row had a non-finite loss or gradient (steps {first}..{first + 2}" in cap.err
    for s in (first, first + 1):
        assert f"step {s}: non-finite loss or gradient" in cap.out
    ckpts = sorted(f for f in os.listdir(out) if f.startswith("ckpt_"))
    assert ckpts == [f"ckpt_{first:07d}.safetensors", f"ckpt_{first + 1:07d}.safetensors"]
    states = [sf.load(out / c) for c in ckpts]
    assert all(_all_finite(s) for s in states)
    # a skipped update leaves the parameters as they were
    for k in states[0]["model"]:
        np.testing.assert_array_equal(states[0]["model"][k].numpy(), states[1]["model"][k].numpy())
    assert states[1]["nonfinite_skipped"] == 2


def test_nonfinite_guard_skips_transient_steps_and_counts_them():
    from shardflow.cli.nonfinite import NonFiniteError, NonFiniteGuard

    g = NonFiniteGuard("skip", max_consecutive=3)
    pattern = [False, True, False, True, True, False, True]
    assert [g.skip_update(i + 1, bad, 1.0, 1.0, 0.1) for i, bad in enumerate(pattern)] == pattern
    assert g.skipped == [2, 4, 5, 7] and g.streak == 1
    g.skip_update(8, True, float("nan"), 1.0, 0.1)
    with pytest.raises(NonFiniteError, match=r"3 steps in a row .*steps 7\.\.9") as e:
        g.skip_update(9, True, float("inf"), 1.0, 0.1)
    assert e.value.step == 7
    with pytest.raises(NonFiniteError, match=r"non-finite at step 5 \(loss nan, gradient norm 2"):
        NonFiniteGuard("raise").skip_update(5, True, float("nan"), 2.0, 0.1)
    assert NonFiniteGuard("raise").skip_update(5, False, 1.0, 2.0, 0.1) is False


def test_on_nonfinite_value_is_checked(tmp_path, capsys):
    assert main(["gpt", "--out", str(tmp_path / "o"), "--on-nonfinite", "ignore"]) == 2
    assert "--on-nonfinite: got 'ignore'; fix: use raise" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_prune_never_removes_the_last_finite_checkpoint(tmp_path):
    from shardflow.cli.train.checkpoints import prune

    for s in (1, 2, 3, 4):
        (tmp_path / f"ckpt_{s:07d}.safetensors").write_bytes(b"x")
    prune(str(tmp_path), 1, protect=str(tmp_path / "ckpt_0000002.safetensors"))
    assert sorted(os.listdir(tmp_path)) == ["ckpt_0000002.safetensors", "ckpt_0000004.safetensors"]


def test_resume_reports_skipped_checkpoint_and_cleans_stale_temp_files(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(tiny(corpus, out, "--max-steps", "4", "--num-workers", "0")) == 0
    newest = out / "ckpt_0000004.safetensors"
    newest.write_bytes(newest.read_bytes()[:-7])  # a damaged copy
    stale = out / ".ckpt_0000006.safetensors.sf999999-abcdefgh.tmp"  # left by a killed save
    stale.write_bytes(b"\0" * 2_000_000)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    capsys.readouterr()
    assert main(tiny(corpus, out, "--max-steps", "5", "--num-workers", "0", "--resume")) == 0
    printed = capsys.readouterr().out
    assert f"removed 1 temp file(s) (2.0 MB) left in {out} by interrupted saves" in printed
    assert not stale.exists()
    assert (f"--resume: skipped checkpoint {newest}: it is truncated" in printed
            and f"using {out / 'ckpt_0000002.safetensors'} instead" in printed), printed
    assert f"resumed from {out / 'ckpt_0000002.safetensors'} at step 2" in printed


def test_resume_on_another_world_size_with_dropout_warns():
    from shardflow.cli.train import TrainConfig
    from shardflow.cli.train.checkpoints import resume_differences

    ck = {"step": 6, "world_size": 2, "config": {"batch_size": 8}}
    lines = resume_differences("c.safetensors", ck, TrainConfig(batch_size=8, dropout=0.1), 1)
    assert len(lines) == 1 and lines[0].startswith("warning: c.safetensors was saved by a run on 2 rank(s)")
    assert "with --dropout 0.1 each rank draws the masks" in lines[0] and "shardflow run -n 2" in lines[0]
    lines = resume_differences("c.safetensors", ck, TrainConfig(batch_size=4, dropout=0.0), 2)
    assert lines == ["warning: c.safetensors was trained with --batch-size 8, this run uses 4; the steps "
                     "from 6 on see different batches than the saved run would have"]
    assert resume_differences("c.safetensors", ck, TrainConfig(batch_size=8), 2) == []


def test_device_cuda_without_a_gpu_is_refused_with_the_fix(tmp_path, capsys):
    from shardflow.backend.xp import cuda_is_available

    if cuda_is_available():
        pytest.skip("this machine has a GPU: tests/gpu/test_train_cuda.py runs it")
    assert main(["gpt", "--out", str(tmp_path / "o"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "--device: got 'cuda'; fix: this machine has no CUDA device" in err
    assert "--device cpu" in err
    assert not (tmp_path / "o").exists()


def test_compile_trains_like_eager(tmp_path, capsys):
    """``shardflow train --compile``: forward and backward through compile_step, clipping and
    the optimizer in the loop; the same losses and weights as the eager run."""
    flags = ["--max-steps", "6", "--eval-interval", "3", "--no-progress", "--log-interval", "1"]
    assert main(["digits", "--out", str(tmp_path / "c"), "--compile", *flags]) == 0
    out = capsys.readouterr().out
    assert "compile: compiled step for inputs (64, 1, 8, 8), (64,)" in out, out
    assert main(["digits", "--out", str(tmp_path / "e"), *flags]) == 0
    rows = [open(tmp_path / d / "metrics.csv").read().splitlines() for d in ("c", "e")]
    assert len(rows[0]) == len(rows[1]) > 6
    for a, b in zip(rows[0][1:], rows[1][1:]):
        ca, cb = a.split(","), b.split(",")
        for u, v in zip(ca[1:5], cb[1:5]):  # train_loss, val_loss, val_acc, lr (not the timings)
            assert (u == "") == (v == "")
            if u:
                np.testing.assert_allclose(float(u), float(v), rtol=1e-5, atol=1e-6)
    ca, ce = (final_state(str(tmp_path / d), 6) for d in ("c", "e"))
    for k in ce["model"]:
        np.testing.assert_allclose(ca["model"][k].numpy(), ce["model"][k].numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


def test_a_model_with_non_finite_outputs_ends_without_a_sample_not_a_crash():
    """--on-nonfinite skip can finish a run whose weights overflowed later (finite but huge):
    the closing sample's probabilities are then NaN. The run reports it and ends normally;
    any other error from sampling still propagates."""
    from types import SimpleNamespace

    from shardflow.cli.train.tasks import GPTTask

    class Exploded:
        def __init__(self, message):
            self.message = message

        def eval(self):
            return self

        def generate(self, *args, **kwargs):
            raise RuntimeError(self.message)

    task = object.__new__(GPTTask)
    task.corpus, task.device = SimpleNamespace(encode=lambda s: np.array([1, 2]), decode=str), "cpu"
    cfg, lines = SimpleNamespace(sample_tokens=4, seed=0), []
    task.model = Exploded("probability tensor contains either `inf`, `nan` or element < 0")
    task.finish(cfg, lines.append)
    assert len(lines) == 1 and "no sample" in lines[0] and "--on-nonfinite raise" in lines[0]
    task.model = Exploded("some other failure")
    with pytest.raises(RuntimeError, match="some other failure"):
        task.finish(cfg, lines.append)
