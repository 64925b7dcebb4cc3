"""The main job on the GPU: ``shardflow train gpt --device cuda`` trains, and its losses track
the same run on the CPU (same seed, same data; float32 on both devices)."""

import csv

from shardflow.cli.train import main


def _losses(out):
    with open(out / "metrics.csv") as f:
        return [float(r["train_loss"]) for r in csv.DictReader(f) if r.get("train_loss")]


def test_train_gpt_on_cuda_tracks_cpu(tmp_path):
    args = ["gpt", "--max-steps", "20", "--log-interval", "5", "--eval-interval", "20",
            "--eval-iters", "2", "--max-corpus-bytes", "200000", "--no-progress",
            "--sample-tokens", "10"]
    assert main([*args, "--out", str(tmp_path / "cpu")]) == 0
    assert main([*args, "--out", str(tmp_path / "gpu"), "--device", "cuda"]) == 0
    cpu, gpu = _losses(tmp_path / "cpu"), _losses(tmp_path / "gpu")
    assert len(cpu) == len(gpu) > 0
    for c, g in zip(cpu, gpu):
        assert abs(c - g) <= 2e-3 * max(1.0, abs(c)), (cpu, gpu)
