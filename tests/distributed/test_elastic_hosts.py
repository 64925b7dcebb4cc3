"""Elastic restart after a host is lost (issue 25), on two hosts played by network
namespaces (the multi-host test's fixture): `shardflow run -n 2 --hosts A:1,B:1
--max-restarts 1 --min-ranks 1 shardflow train gpt` loses host B in the middle of training
(every process in B's namespace killed, and B no longer answers the ssh agent, as a dead
machine would not answer ssh): the launcher ends the job, finds B gone, restarts on A alone,
and training resumes from the newest checkpoint and finishes with the uninterrupted run's
parameters; nothing is left running on either host."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import shardflow as sf
from shardflow.cli.train import main
from shardflow.comm.launcher import kill_session, rank_env

from .test_multihost import REPO, two_hosts  # noqa: F401 (the fixture)

pytestmark = pytest.mark.mpi

STEPS = 60
FLAGS = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
         "--batch-size", "4", "--eval-iters", "1", "--eval-interval", "1000", "--ckpt-interval",
         "4", "--log-interval", "1", "--sample-tokens", "2", "--no-progress", "--max-steps",
         str(STEPS), "--num-workers", "0", "--keep-checkpoints", "100", "--dropout", "0"]

LOSABLE = """#!/bin/sh
# the multi-host agent, except for a host that was lost: it answers as ssh would
host="$1"
if [ -e "{lost}/$host" ]; then
  echo "ssh: connect to host $host port 22: No route to host" >&2
  exit 255
fi
exec {agent} "$@"
"""


def _pids_in(ns):
    """The live processes in network namespace ``ns`` (by the namespace's inode)."""
    want = os.stat(f"/run/netns/{ns}")
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{name}/ns/net")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(") ", 1)[1][0]
        except OSError:
            continue
        if (st.st_ino, st.st_dev) == (want.st_ino, want.st_dev) and state != "Z":
            out.append(int(name))
    return out


def _kill_all_in(ns, within=10.0):
    """SIGKILL every process in ``ns`` until none is left (a machine that died)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        pids = _pids_in(ns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"processes in {ns} survived SIGKILL: {_pids_in(ns)}")


def test_a_lost_host_is_dropped_and_training_finishes_on_the_other(two_hosts, tmp_path):  # noqa: F811
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n"
                                           for i in range(200)))
    lost = tmp_path / "lost"
    lost.mkdir()
    agent = tmp_path / "agent"
    agent.write_text(LOSABLE.format(lost=lost, agent=two_hosts["agent"]))
    agent.chmod(0o755)
    ns_b = two_hosts["ns_a"].replace("sfA", "sfB")
    out = tmp_path / "elastic"
    argv = [sys.executable, "-m", "shardflow", "run", "-n", "2", "--hosts", two_hosts["hosts"],
            "--max-restarts", "1", "--min-ranks", "1", "shardflow", "train", "gpt", "--data",
            str(corpus), "--out", str(out), *FLAGS]
    env = rank_env({"PRTE_MCA_plm_ssh_agent": str(agent)})
    inner = f'hostname {two_hosts["ns_a"]}; cd {REPO}; exec "$@"'
    proc = subprocess.Popen(["ip", "netns", "exec", two_hosts["ns_a"], "unshare", "--uts",
                             "/bin/sh", "-c", inner, "sh", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines, lost_at, back_at = [], [], []

    def read():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if lost_at and not back_at and "resumed from" in "\n".join(lines[-3:]):
                back_at.append(time.monotonic())  # the restarted job is training again
            if not lost_at and f"step 12/{STEPS} " in line:
                (lost / two_hosts["ip_b"]).touch()  # B stops answering ...
                _kill_all_in(ns_b)  # ... and everything on it dies
                lost_at.append(time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=300)
    finally:
        kill_session(proc.pid, grace=0.5)
        reader.join(timeout=10)
    output = "\n".join(lines)
    assert lost_at, output
    assert rc == 0, output
    assert (f"no longer answer: dropped with their ranks: 1 rank(s) on {two_hosts['ip_a']}:1 (was 2)"
            in output), output
    assert back_at and back_at[0] - lost_at[0] < 90, output  # bounded: host lost -> training
    after = output.split("restart 1 of 1")[1]
    assert "world size 1" in after and "resumed from " in after, output
    assert _pids_in(ns_b) == [] and _pids_in(two_hosts["ns_a"]) == [], "processes left"
    ref = tmp_path / "ref"
    assert main(["gpt", "--data", str(corpus), "--out", str(ref), *FLAGS]) == 0
    a = sf.load(out / f"ckpt_{STEPS:07d}.safetensors")
    b = sf.load(ref / f"ckpt_{STEPS:07d}.safetensors")
    assert a["world_size"] == 1
    for k in b["model"]:
        np.testing.assert_allclose(a["model"][k].numpy(), b["model"][k].numpy(), rtol=2e-5,
                                   atol=2e-5, err_msg=k)
