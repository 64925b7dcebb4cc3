"""The run's records: ``--out/metrics.csv`` (one row per logged step and per evaluation,
rewritten atomically by rank 0 after each row) and ``loss.png`` at the end (with
matplotlib, when installed)."""

from __future__ import annotations

import csv
import os

from shardflow import checkpoint

from .config import TrainConfig

FIELDS = ["step", "train_loss", "val_loss", "val_acc", "lr", "throughput", "time_s"]


class MetricsLog:
    """The rows of ``metrics.csv``; a resumed run keeps the rows before its start step."""

    def __init__(self, cfg: TrainConfig, start_step: int, master: bool):
        self.path = os.path.join(cfg.out, "metrics.csv")
        self.master = master
        rows = _read(self.path) if (cfg.resume and start_step > 0) else []
        self.rows = [r for r in rows if int(r["step"]) < start_step
                     or (int(r["step"]) == start_step and r["train_loss"])]

    def record_eval(self, step: int, val_loss: float, val_acc: float | None, time_s: float) -> None:
        self._record({"step": step, "train_loss": "", "val_loss": f"{val_loss:.5f}",
                      "val_acc": "" if val_acc is None else f"{val_acc:.4f}", "lr": "",
                      "throughput": "", "time_s": f"{time_s:.2f}"})

    def record_train(self, step: int, loss: float, lr: float, throughput: float, time_s: float) -> None:
        self._record({"step": step, "train_loss": f"{loss:.5f}", "val_loss": "", "val_acc": "",
                      "lr": f"{lr:.3e}", "throughput": f"{throughput:.1f}", "time_s": f"{time_s:.2f}"})

    def _record(self, row: dict) -> None:
        self.rows.append(row)
        if self.master:
            _write(self.path, self.rows)


def _read(path):
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _write(path, rows):
    def write(fh):
        import io

        s = io.StringIO()
        w = csv.DictWriter(s, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
        fh.write(s.getvalue().encode())

    checkpoint.atomic_write(path, write)


def plot(rows, path, baseline, task):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    tr = [(int(r["step"]), float(r["train_loss"])) for r in rows if r["train_loss"]]
    va = [(int(r["step"]), float(r["val_loss"])) for r in rows if r["val_loss"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    if tr:
        ax.plot(*zip(*tr), label="train loss", alpha=0.7)
    if va:
        ax.plot(*zip(*va), "o-", label="val loss")
    ax.axhline(baseline, color="gray", ls="--", label=f"baseline {baseline:.3f}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(f"shardflow train {task}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
