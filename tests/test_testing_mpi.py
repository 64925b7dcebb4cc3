"""The multi-rank test harness (``shardflow.testing.mpi``) starts a job again when the
launcher failed at its own startup (PMIx's listener race), and only then."""

import sys

from shardflow.testing import mpi

FLAKY_LAUNCHER = r"""
import os, sys
marker = sys.argv[1]
n = int(open(marker).read()) if os.path.exists(marker) else 0
open(marker, "w").write(str(n + 1))
if n < {failures}:
    sys.stderr.write("The PMIx server's listener thread failed to start. We cannot\ncontinue.\n")
    sys.exit(213)
print("ranks ran", n)
"""


def _job(tmp_path, failures, message_ok=True):
    script = tmp_path / "launcher.py"
    code = FLAKY_LAUNCHER.format(failures=failures)
    if not message_ok:
        code = code.replace("The PMIx server's listener thread failed to start", "rank 0 died")
    script.write_text(code)
    marker = tmp_path / "count"
    return mpi._run([sys.executable, str(script), str(marker)], None, 30), marker


def test_launcher_startup_race_is_retried(tmp_path):
    res, marker = _job(tmp_path, failures=1)
    assert res.returncode == 0 and "ranks ran 1" in res.stdout
    assert marker.read_text() == "2"


def test_retries_are_bounded_and_the_last_failure_is_reported(tmp_path):
    res, marker = _job(tmp_path, failures=10)
    assert res.returncode == 213 and "listener thread failed" in res.stderr
    assert marker.read_text() == str(mpi.LAUNCH_ATTEMPTS)


def test_other_failures_are_not_retried(tmp_path):
    res, marker = _job(tmp_path, failures=1, message_ok=False)
    assert res.returncode == 213 and marker.read_text() == "1"
