"""Processes die with their parent, whatever it died of (issue 25, gap 3): a `shardflow run`
killed with SIGKILL takes mpiexec and every rank with it, also when the ranks print nothing
(before: mpiexec was re-parented and the ranks spun in their collectives for good); a
`shardflow train` killed with SIGKILL takes its DataLoader worker with it, also when the
worker is blocked writing a large batch (before: it stayed forever)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from shardflow.comm.launcher import child_processes

QUIET = """
import time
import shardflow as sf
import shardflow.distributed as dist
dist.init_process_group()
t = sf.zeros(4)
print("ready", flush=True)
while True:  # prints nothing more: nothing tells the ranks that the launcher is gone
    dist.all_reduce(t)
    time.sleep(0.01)
"""


def _descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = child_processes(todo.pop())
        out += kids
        todo += kids
    return out


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


def _gone_within(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end and _alive(pids):
        time.sleep(0.1)
    left = _alive(pids)
    for p in left:  # the test cleans up what the code under test left
        os.kill(p, signal.SIGKILL)
    return left


def _start(argv, wait_for, count=1, timeout=120):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    seen, end = [], time.monotonic() + timeout
    while sum(wait_for in line for line in seen) < count and time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
    assert sum(wait_for in line for line in seen) >= count, "".join(seen)
    return proc


@pytest.mark.mpi
def test_sigkill_of_the_launcher_ends_mpiexec_and_quiet_ranks(tmp_path):
    script = tmp_path / "quiet.py"
    script.write_text(QUIET)
    launcher = _start([sys.executable, "-m", "shardflow", "run", "-n", "2", str(script)], "ready", 2)
    job = _descendants(launcher.pid)
    assert len(job) >= 3, job  # mpiexec and two ranks
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    assert _gone_within(job, 15) == []


def test_sigkill_of_train_ends_its_dataloader_worker_blocked_on_a_large_batch(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("\n".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(300)))
    # 4096 x 64 tokens x 2 (inputs, targets) x 8 bytes = 4 MB per batch: more than a pipe holds
    argv = [sys.executable, "-m", "shardflow", "train", "gpt", "--data", str(corpus), "--out",
            str(tmp_path / "o"), "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size",
            "64", "--batch-size", "4096", "--eval-iters", "1", "--eval-interval", "100000",
            "--max-steps", "100000", "--no-progress", "--num-workers", "1", "--log-interval", "1"]
    train = _start(argv, "step 2/")
    workers = _descendants(train.pid)
    assert workers, "no DataLoader worker found"
    os.kill(train.pid, signal.SIGKILL)
    train.wait()
    assert _gone_within(workers, 5) == []
