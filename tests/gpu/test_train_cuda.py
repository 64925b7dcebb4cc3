"""The main job on the GPU: ``shardflow train gpt --device cuda`` trains, and its losses track
the same run on the CPU (same seed, same data; float32 on both devices)."""

import csv

from shardflow.cli.train import main


def _losses(out):
    with open(out / "metrics.csv") as f:
        return [float(r["train_loss"]) for r in csv.DictReader(f) if r.get("train_loss")]


def test_train_gpt_on_cuda_tracks_cpu(tmp_path):
    check_train_gpt_tracks_cpu(tmp_path, steps=20, corpus_bytes=200000)


def check_train_gpt_tracks_cpu(tmp_path, steps, corpus_bytes, model_args=()):
    """The same run on cpu and cuda: every logged training loss within 2e-3 (relative)."""
    args = ["gpt", "--max-steps", str(steps), "--log-interval", "1", "--eval-interval", str(steps),
            "--eval-iters", "2", "--max-corpus-bytes", str(corpus_bytes), "--no-progress",
            "--sample-tokens", "10", *model_args]
    assert main([*args, "--out", str(tmp_path / "cpu")]) == 0
    assert main([*args, "--out", str(tmp_path / "gpu"), "--device", "cuda"]) == 0
    cpu, gpu = _losses(tmp_path / "cpu"), _losses(tmp_path / "gpu")
    assert len(cpu) == len(gpu) == steps
    for c, g in zip(cpu, gpu):
        assert abs(c - g) <= 2e-3 * max(1.0, abs(c)), (cpu, gpu)
