"""``shardflow run`` starts the job again when mpiexec fails on its own startup race (Open
MPI's PMIx listener, seen on loaded machines) before any rank has started, and only then.

A stand-in mpiexec (SHARDFLOW_MPIEXEC) prints prterun's real message and exits 213 for its
first ``fails`` calls, then runs the real mpiexec."""

import io
import stat

import pytest

from shardflow.cli.run import launch_job
from shardflow.comm.launcher import LAUNCH_ATTEMPTS, find_mpiexec

pytestmark = pytest.mark.mpi

_BANNER = ("--------------------------------------------------------------------------\n"
           "The PMIx server's listener thread failed to start. We cannot\n"
           "continue.\n"
           "--------------------------------------------------------------------------\n")


def _flaky_mpiexec(tmp_path, fails: int) -> str:
    real = find_mpiexec()
    counter = tmp_path / "calls"
    script = tmp_path / "mpiexec"
    script.write_text(f"""#!/bin/sh
n=$(cat {counter} 2>/dev/null || echo 0)
n=$((n + 1))
echo $n > {counter}
if [ $n -le {fails} ]; then
  printf '%s' "{_BANNER}" >&2
  exit 213
fi
exec {real} "$@"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _launch(tmp_path, monkeypatch, fails, program):
    monkeypatch.setenv("SHARDFLOW_MPIEXEC", _flaky_mpiexec(tmp_path, fails))
    out, err = io.StringIO(), io.StringIO()
    job = launch_job(2, program, stdout=out, stderr=err, timeout=60)
    calls = int((tmp_path / "calls").read_text())
    return job, calls, out.getvalue(), err.getvalue()


def test_a_startup_race_is_retried_and_the_job_runs(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    program = ["python", "-c", f"open({str(marker)!r} + __import__('os').environ['OMPI_COMM_WORLD_RANK'], 'w')"]
    job, calls, out, err = _launch(tmp_path, monkeypatch, 1, program)
    assert job.exit_code == 0, err
    assert calls == 2
    assert f"starting the job again (attempt 2 of {LAUNCH_ATTEMPTS})" in err, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == ["ran0", "ran1"]


def test_the_launcher_gives_up_after_its_attempts(tmp_path, monkeypatch):
    job, calls, out, err = _launch(tmp_path, monkeypatch, 99, ["python", "-c", "pass"])
    assert calls == LAUNCH_ATTEMPTS
    assert job.exit_code == 213, err
    assert "The PMIx server's listener thread failed to start" in err, err


def test_a_program_that_failed_is_not_started_again(tmp_path, monkeypatch):
    # the message in a rank's own output must not make the launcher run the program twice
    program = ["python", "-c", "import sys; sys.stderr.write(\"The PMIx server's listener "
               "thread failed to start\\n\"); sys.exit(3)"]
    job, calls, out, err = _launch(tmp_path, monkeypatch, 0, program)
    assert calls == 1, err
    assert job.exit_code == 3, err
