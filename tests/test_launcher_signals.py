"""Signals to `shardflow run` reach every rank; `shardflow train` saves before it stops.

The launcher forwards SIGTERM / SIGHUP / SIGINT to the ranks, gives them --grace seconds,
then kills what is left; it exits 128 + the signal. `shardflow train` finishes its step,
writes a checkpoint on the step the ranks agreed on and exits 128 + the signal.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import shardflow as sf
from shardflow.comm.launcher import kill_session, session_processes

SRC = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n" for i in range(200))
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "4",
        "--eval-iters", "1", "--eval-interval", "100000", "--log-interval", "1", "--sample-tokens", "5",
        "--no-progress", "--max-corpus-bytes", "20000", "--warmup-steps", "2",
        "--keep-checkpoints", "100"]


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.py").write_text(SRC)
    return str(d)


class _Job:
    """A command in its own session whose output is read line by line in a thread."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(line) for line in list(self.lines)):
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        return False

    def descendants(self):
        out, todo = [], [self.proc.pid]
        while todo:
            kids = child_processes(todo.pop())
            out += kids
            todo += kids
        return out

    def finish(self, timeout):
        start = time.monotonic()
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            kill_session(self.proc.pid, grace=0.5)
        self._reader.join(timeout=5)
        return rc, time.monotonic() - start

    @property
    def output(self):
        return "\n".join(self.lines)


def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()  # state ppid pgrp session ...


def child_processes(pid):
    out = []
    for name in os.listdir("/proc"):
        fields = _stat(name) if name.isdigit() else None
        if fields and int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(name))
    return out


def _alive(pids):
    return [p for p in pids if (_stat(p) or ["Z"])[0] != "Z"]


def _run_cli(*argv):
    return [sys.executable, "-u", "-m", "shardflow.cli.main", *argv]


@pytest.mark.mpi
def test_sigterm_to_launcher_checkpoints_every_rank_and_resume_continues(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    job = _Job(_run_cli("run", "-n", "2", "shardflow", "train", "gpt", "--data", corpus, "--out", str(out),
                        "--max-steps", "100000", "--ckpt-interval", "100000", "--num-workers", "0", *TINY))
    try:
        assert job.wait_for(lambda line: "step 3/100000" in line, timeout=120), job.output
        ranks = job.descendants()
        job.proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        rc, _ = job.finish(timeout=60)
        took = time.monotonic() - sent
    finally:
        kill_session(job.proc.pid, grace=0.5)
    assert rc == 143, job.output
    assert took < 30, f"the job took {took:.1f} s to stop"
    assert not _alive(ranks), f"processes left: {_alive(ranks)}\n{job.output}"
    stopped = [line for line in job.output.splitlines() if "stopped by SIGTERM at step" in line]
    assert len(stopped) == 1, job.output  # rank 0 reports, once
    step = int(stopped[0].split("at step ")[1].split(";")[0])
    logged = [int(line.split("step ")[1].split("/")[0]) for line in job.output.splitlines()
              if "] step " in line and "/100000" in line]
    assert step >= 3 and max(logged) == step  # saved on the last step trained, no further step
    ckpts = sorted(f for f in os.listdir(out) if f.startswith("ckpt_"))
    assert ckpts == [f"ckpt_{step:07d}.safetensors"]  # the emergency checkpoint, and only it
    state = sf.load(out / ckpts[0])
    assert state["step"] == step and state["world_size"] == 2
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]

    from shardflow.cli.train import main

    assert main(["gpt", "--data", corpus, "--out", str(out), "--max-steps", str(step + 2), "--resume",
                 "--ckpt-interval", "100000", "--num-workers", "0", *TINY]) == 0
    printed = capsys.readouterr().out
    assert f"resumed from {out / ckpts[0]} at step {step}" in printed
    assert "was saved by a run on 2 rank(s), this run has 1" in printed
    assert sf.load(out / f"ckpt_{step + 2:07d}.safetensors")["step"] == step + 2


_STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: print("ignoring TERM", flush=True))
signal.signal(signal.SIGHUP, lambda *a: print("ignoring HUP", flush=True))
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.mpi
def test_ranks_that_ignore_the_signal_are_killed_after_the_grace_period(tmp_path):
    sig, code = signal.SIGHUP, 129  # SIGTERM takes the same path (and is tested with train above)
    script = tmp_path / "stubborn.py"
    script.write_text(_STUBBORN)
    job = _Job(_run_cli("run", "-n", "2", "--grace", "1", str(script)))
    try:
        assert job.wait_for(lambda line: line.endswith("ready") and "[rank 1]" in line, 60), job.output
        assert job.wait_for(lambda line: line.endswith("ready") and "[rank 0]" in line, 60), job.output
        ranks = job.descendants()
        assert len(ranks) >= 3  # mpiexec and its two ranks
        job.proc.send_signal(sig)
        rc, took = job.finish(timeout=30)
    finally:
        kill_session(job.proc.pid, grace=0.5)
    assert rc == code, job.output
    assert took < 15
    assert job.output.count(f"ignoring {sig.name[3:]}") == 2  # both ranks got it
    assert "did not exit within 1 s" in job.output
    assert not _alive(ranks), job.output
    assert not session_processes(ranks[0])  # mpiexec's session is empty


def test_ctrl_c_saves_a_checkpoint_in_a_single_process_run(corpus, tmp_path):
    from shardflow.cli.train import main

    out = tmp_path / "out"
    job = _Job([sys.executable, "-u", "-m", "shardflow.cli.main", "train", "gpt", "--data", corpus,
                "--out", str(out), "--max-steps", "100000", "--ckpt-interval", "100000",
                "--num-workers", "1", *TINY])  # a DataLoader worker: Ctrl-C must not break it
    try:
        assert job.wait_for(lambda line: line.startswith("step 2/100000"), timeout=120), job.output
        job.proc.send_signal(signal.SIGINT)
        rc, took = job.finish(timeout=60)
    finally:
        kill_session(job.proc.pid, grace=0.5)
    assert rc == 130, job.output
    line = next(x for x in job.lines if "stopped by SIGINT at step" in x)
    step = int(line.split("at step ")[1].split(";")[0])
    assert sorted(os.listdir(out)) == [f"ckpt_{step:07d}.safetensors", "metrics.csv"]
    assert sf.load(out / f"ckpt_{step:07d}.safetensors")["step"] == step
    assert main(["gpt", "--data", corpus, "--out", str(out), "--max-steps", str(step + 1), "--resume",
                 "--ckpt-interval", "100000", "--num-workers", "0", *TINY]) == 0
