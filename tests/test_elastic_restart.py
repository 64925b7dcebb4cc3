"""Elastic restarts (issue 25): `shardflow run -n 3 --max-restarts 1 [--min-ranks 2]
shardflow train gpt` with a rank killed (SIGKILL) at a random step finishes: on the same 3
ranks, or on the 2 still there; it resumes from the newest complete checkpoint (no step is
lost beyond it), its final loss and parameters equal an uninterrupted run's, and no process
is left.

Tolerance: the batch is global (--batch-size 6 on 3 ranks is 2 per rank, on 2 ranks 3 per
rank, in one process 6), so every layout computes the same mean gradient; what differs is
the order of float32 sums (the slices' means, the all-reduce). As in test_train_ddp: 2e-5
on the logged losses (metrics.csv has 5 decimals) and on the parameters after 60 AdamW
steps (dropout 0: no per-rank masks)."""

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import shardflow as sf
from shardflow import checkpoint
from shardflow.cli.train import main
from shardflow.comm.launcher import child_processes, kill_session

pytestmark = pytest.mark.mpi

STEPS = 60  # ~20 ms a step here: a kill at step <= 30 lands well before the end
FLAGS = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
         "--batch-size", "6", "--eval-iters", "1", "--eval-interval", "1000", "--ckpt-interval",
         "4", "--log-interval", "1", "--sample-tokens", "2", "--no-progress", "--max-steps",
         str(STEPS), "--num-workers", "0", "--keep-checkpoints", "100", "--dropout", "0"]
SRC = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n" for i in range(200))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    (d / "a.py").write_text(SRC)
    return str(d)


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    """The uninterrupted run (one process, the same FLAGS), trained once for every test."""
    ref = tmp_path_factory.mktemp("ref")
    assert main(["gpt", "--data", corpus, "--out", str(ref), *FLAGS]) == 0
    return ref


def _alive(pids):
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(") ", 1)[1][0] != "Z":
                    out.append(p)
        except OSError:
            pass
    return out


class ElasticJob:
    """`shardflow run ... shardflow train gpt` that kills rank ``victim`` once step
    ``kill_at`` is logged, and notes the newest complete checkpoint when the launcher
    announces the restart."""

    def __init__(self, corpus, out, launcher_flags, kill_at, victim=1):
        argv = [sys.executable, "-m", "shardflow", "run", "-n", "3", *launcher_flags, "shardflow",
                "train", "gpt", "--data", corpus, "--out", str(out), *FLAGS]
        self.out, self.kill_at, self.victim = str(out), kill_at, victim
        self.lines, self.seen = [], set()
        self.killed_t = self.restart_ckpt = self.back_t = None
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _descendants(self):
        out, todo = [], [self.proc.pid]
        while todo:
            kids = child_processes(todo.pop())
            out += kids
            todo += kids
        self.seen.update(out)
        return out

    def _kill_victim(self):
        for pid in self._descendants():  # also: the first start's processes, checked at the end
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={self.victim}".encode() in env and b"shardflow.cli.main" in cmd:
                os.kill(pid, signal.SIGKILL)
                self.killed_t = time.monotonic()
                return

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self.killed_t is None and f"step {self.kill_at}/{STEPS} " in line:
                self._kill_victim()
            elif "shardflow run: restart 1 of 1" in line:
                found = checkpoint.find_latest(self.out, on_skip=lambda m: None)
                self.restart_ckpt = int(sf.load(found)["step"]) if found else 0
            elif (self.restart_ckpt is not None and self.back_t is None and "] step " in line
                  and f"/{STEPS} loss" in line):
                self.back_t = time.monotonic()
                self._descendants()  # the second start's processes, to check none is left

    def finish(self, timeout=300):
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            kill_session(self.proc.pid, grace=0.5)
        self.reader.join(timeout=10)
        return rc

    @property
    def output(self):
        return "\n".join(self.lines)


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return {int(r[0]): float(r[1]) for r in rows if r[1]}


def _run_elastic(corpus, ref, tmp_path, launcher_flags, world_after):
    kill_at = random.Random().randint(5, STEPS // 2)
    job = ElasticJob(corpus, tmp_path / "elastic", launcher_flags, kill_at)
    rc = job.finish()
    where = f"(rank 1 killed at step {kill_at})\n{job.output}"
    assert rc == 0, where
    assert job.killed_t is not None and job.restart_ckpt is not None, where
    assert "shardflow run: restart 1 of 1 after rank 1 died of SIGKILL: " in job.output, where
    assert f"world size {world_after} (" in job.output.split("restart 1 of 1")[1], where
    # resumed from the newest complete checkpoint: no step lost beyond it
    resumed = [line for line in job.lines if "resumed from " in line]
    assert len(resumed) == 1 and f"at step {job.restart_ckpt}" in resumed[0], where
    # The kill lands a few steps after "step kill_at" is read (the output reaches us through
    # mpiexec's forwarding while steps of a few ms go on: 8 steps late once in CI), so the
    # checkpoint is bounded by the last step the first start logged (+1: on the launcher's
    # SIGTERM the survivors finish their step and save), not by kill_at.
    before = job.output.split("restart 1 of 1")[0]
    last_logged = max(int(s) for s in re.findall(rf"\] step (\d+)/{STEPS} loss", before))
    assert 0 < job.restart_ckpt <= last_logged + 1 and kill_at - job.restart_ckpt <= 8, where
    # the same curve as the uninterrupted run, and the same final parameters
    got, want = _losses(tmp_path / "elastic" / "metrics.csv"), _losses(ref / "metrics.csv")
    assert sorted(got) == list(range(1, STEPS + 1)), where
    np.testing.assert_allclose([got[s] for s in sorted(got)], [want[s] for s in sorted(want)],
                               rtol=0, atol=2e-5, err_msg=where)
    a = sf.load(tmp_path / "elastic" / f"ckpt_{STEPS:07d}.safetensors")
    b = sf.load(ref / f"ckpt_{STEPS:07d}.safetensors")
    assert a["world_size"] == world_after and a["step"] == b["step"] == STEPS
    # atol 5e-5: after the restart the gradients are averaged over another number of ranks
    # (another summation order), and AdamW's update g / sqrt(v) turns the rounding of a
    # near-zero gradient element into a visible step: 2.1e-5 and 2.3e-5 measured on one bias
    # element (sessions 30, 31) against 1e-6 typical
    for k in b["model"]:
        np.testing.assert_allclose(a["model"][k].numpy(), b["model"][k].numpy(), rtol=2e-5,
                                   atol=5e-5, err_msg=k)
    assert _alive(job.seen) == [], where  # no process of either start is left
    return job


def test_a_killed_rank_restarts_on_the_same_ranks_and_finishes_like_an_uninterrupted_run(
        corpus, uninterrupted, tmp_path):
    job = _run_elastic(corpus, uninterrupted, tmp_path, ["--max-restarts", "1"], 3)
    assert "the same 3 rank(s)" in job.output


def test_with_min_ranks_the_job_goes_on_on_the_ranks_still_there(corpus, uninterrupted, tmp_path):
    job = _run_elastic(corpus, uninterrupted, tmp_path, ["--max-restarts", "1", "--min-ranks", "2"], 2)
    assert "rank 1 dropped: 2 rank(s) (was 3)" in job.output
    assert "was saved by a run on 3 rank(s), this run has 2" in job.output


def test_restarts_are_bounded_and_refused_configurations_are_not_restarted(corpus, tmp_path):
    # every start fails the same way: K restarts, then the exit code of the last start
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\n"
                      "print('start', os.environ['SHARDFLOW_RESTART_COUNT'], "
                      "os.environ['TORCHELASTIC_RESTART_COUNT'], flush=True)\n"
                      "sys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    p = subprocess.run([sys.executable, "-m", "shardflow", "run", "-n", "2", "--max-restarts", "2",
                        str(script)], capture_output=True, text=True, timeout=180)
    assert p.returncode == 3, p.stdout + p.stderr
    for k in range(3):  # (rank 0 may be stopped before its line is out: rank 1's)
        assert p.stdout.count(f"[rank 1] start {k} {k}") == 1, p.stdout
    # (whether mpiexec names the rank that exited 3 depends on its timing: "rank 1 failed
    # (exit code 3, exit)" or "mpiexec exited with code 3")
    assert "restart 2 of 2 after " in p.stderr and "exit" in p.stderr.split("restart 2 of 2")[1], p.stderr
    assert "not restarted: --max-restarts 2 used up" in p.stderr
    # exit code 2 (train refused its configuration) would be refused again: no restart
    p = subprocess.run([sys.executable, "-m", "shardflow", "run", "-n", "2", "--max-restarts", "2",
                        "shardflow", "train", "gpt", "--data", corpus, "--batch-size", "-1"],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 2 and "restart 1" not in p.stderr, p.stdout + p.stderr
    assert "not restarted: it exited with code 2" in p.stderr
    # impossible launcher flags
    p = subprocess.run([sys.executable, "-m", "shardflow", "run", "-n", "2", "--min-ranks", "3",
                        "--max-restarts", "1", str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--min-ranks must be between 1 and -n (2), got 3" in p.stderr
