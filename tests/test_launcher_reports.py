"""`shardflow run` says in one line of its own what went wrong with the hosts, and names
the rank a signal reached (issue 25, gap 6). Before: a bad hostfile printed PRTE's page and
"mpiexec exited with code 250"; an unreachable host PRTE's daemon page and code 255; a
SIGTERM to one rank of `shardflow train` was reported as "first failing rank: 0"."""

import os
import signal
import subprocess

import pytest

from shardflow.cli import hosts as hosts_mod
from shardflow.cli import run as run_cli
from shardflow.comm.launcher import kill_session

from .test_launcher_signals import TINY, _Job, _run_cli, corpus  # noqa: F401 (fixture)


@pytest.mark.parametrize("text,needle", [
    ("localhost slots=abc\n", "line 1: 'localhost slots=abc': slots must be a positive integer, got 'abc'"),
    ("# head\nlocalhost slots=0\n", "line 2: 'localhost slots=0': slots must be a positive integer, got '0'"),
    ("localhost slots=2 max_slots=1\n", "max_slots (1) is below slots (2)"),
    ("localhost 4\n", "line 1: 'localhost 4': '4' is not key=value (Open MPI would ignore it); "
                      "fix: e.g. 'localhost slots=4'"),
    ("# only a comment\n\n", "names no host (only comments or blank lines)"),
])
def test_bad_hostfile_is_one_line_naming_the_line(tmp_path, capsys, text, needle):
    hf = tmp_path / "hosts"
    hf.write_text(text)
    assert run_cli.main(["-n", "2", "--hostfile", str(hf), "python", "-c", "pass"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shardflow run: error: ") and "\n" not in err, err
    assert needle in err and str(hf) in err


def test_missing_hostfile_and_bad_hosts_entries(tmp_path, capsys):
    assert run_cli.main(["-n", "2", "--hostfile", str(tmp_path / "nope"), "python", "-c", "pass"]) == 2
    assert "cannot be read (No such file or directory)" in capsys.readouterr().err
    assert run_cli.main(["-n", "2", "--hosts", "a:2,b:x", "python", "-c", "pass"]) == 2
    assert ("--hosts entry 2: 'b:x': the slot count must be a positive integer, got 'x'"
            in capsys.readouterr().err)
    assert [h.host for h in hosts_mod.check_hosts("a:2,b", None)] == ["a", "b"]


def test_prte_hostfile_pages_become_one_line():
    page = ["PRTE detected a bad parameter in the hostfile:", "", "   /x/hf", "",
            "The max_slots parameter is less than the slots parameter:", "", "   slots=2",
            "   max_slots=1"]
    line = hosts_mod.translate_prte_block(page, [], "/x/hf")
    assert line == ("shardflow run: error: Open MPI refused --hostfile /x/hf: The max_slots parameter "
                    "is less than the slots parameter: slots=2 max_slots=1; fix: one `host slots=N` "
                    "per line")
    assert hosts_mod.translate_prte_block(["something else"], [], None) is None


_FAILING_SSH = """#!/bin/sh
# what ssh does for a host that does not resolve (Open MPI may pass options before the host)
for a; do case "$a" in -*) ;; *) host=$a; break ;; esac; done
echo "ssh: Could not resolve hostname $host: Name or service not known" >&2
exit 255
"""


@pytest.mark.mpi
def test_unreachable_host_is_one_line_naming_its_entry(tmp_path):
    agent = tmp_path / "ssh"
    agent.write_text(_FAILING_SSH)
    agent.chmod(0o755)
    env = {**os.environ, "PRTE_MCA_plm_ssh_agent": str(agent)}
    p = subprocess.run(_run_cli("run", "-n", "2", "--hosts", "gone.invalid:2", "python", "-c", "pass"),
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 255, p.stderr
    assert "A daemon failed to report back" not in p.stderr and "=====" not in p.stderr, p.stderr
    ours = [ln for ln in p.stderr.splitlines() if ln.startswith("shardflow run: error:")]
    assert len(ours) == 1, p.stderr
    assert "host 'gone' (--hosts entry 1: 'gone.invalid:2') did not start its Open MPI daemon" in ours[0]
    assert "ssh said: ssh: Could not resolve hostname gone.invalid" in ours[0], p.stderr


def _rank_pid(job, rank):
    for pid in job.descendants():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"shardflow.cli.main" in cmd:
            return pid
    return None


@pytest.mark.mpi
def test_a_signal_to_one_rank_is_reported_for_that_rank(corpus, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    job = _Job(_run_cli("run", "-n", "3", "shardflow", "train", "gpt", "--data", corpus, "--out",
                        str(out), "--max-steps", "100000", "--ckpt-interval", "100000",
                        "--num-workers", "0", *[a if a != "4" else "6" for a in TINY]))
    try:
        assert job.wait_for(lambda line: "step 2/100000" in line, timeout=180), job.output
        pid = _rank_pid(job, 2)
        assert pid is not None, job.output
        os.kill(pid, signal.SIGTERM)
        rc, _ = job.finish(timeout=90)
    finally:
        kill_session(job.proc.pid, grace=0.5)
    assert rc == 143, job.output
    assert "shardflow run: stopped: rank 2 received SIGTERM; every rank stopped after step" in job.output
    assert "first failing rank" not in job.output and "the job failed" not in job.output
