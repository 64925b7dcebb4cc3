"""Failure handling: every failure ends the whole job quickly, names rank and op, leaves no process.

Scenarios: a rank killed mid-all_reduce (``os._exit``), a rank raising, a rank that never
calls the collective (``SHARDFLOW_COMM_TIMEOUT=3``), mismatched shapes under
``SHARDFLOW_DEBUG=collectives``; and the same through the ``shardflow run`` launcher,
which must print the root-cause block.
"""

from pathlib import Path

import pytest

from shardflow.testing.mpi import launch_cli, run_program

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.distributed.programs."
# the programs the launcher tests run as plain scripts (each ends with a __main__ block)
SCRIPTS = Path(__file__).parent / "programs"


def _assert_fast_and_clean(res, bound):
    assert res.returncode != 0, res.output
    assert not res.timed_out, f"job hung past the test timeout:\n{res.output}"
    assert res.elapsed < bound, f"took {res.elapsed:.1f}s (bound {bound}s)\n{res.output}"
    assert not res.leftover, f"processes left behind: {res.leftover}"


@pytest.mark.parametrize("n", [2, 3])
def test_rank_killed_mid_allreduce(n):
    res = run_program(PROGRAMS + "rank_killed_mid_allreduce", n=n, timeout=40)
    _assert_fast_and_clean(res, 20)
    assert "Exit code:    3" in res.output or "exit code 3" in res.output.lower(), res.output


def test_rank_raising_aborts_job():
    res = run_program(PROGRAMS + "rank_raises", n=3, timeout=40)
    _assert_fast_and_clean(res, 20)
    assert "[rank 1] ValueError: deliberate failure on rank 1" in res.stderr, res.output
    assert "rank 1 raised an uncaught ValueError" in res.stderr


def test_rank_never_arriving_times_out():
    res = run_program(PROGRAMS + "rank_never_arrives", n=3, timeout=40,
                      env={"SHARDFLOW_COMM_TIMEOUT": "3"})
    _assert_fast_and_clean(res, 20)
    out = res.stderr
    assert "collective timed out on rank" in out, res.output
    assert "all_reduce (collective #2" in out and "shape (2, 5)" in out, out
    assert ("ranks that did not arrive: rank 1 (last started collective #1 "
            "(all_reduce(shape=(4,), dtype=float32, op=sum)))") in out, out
    assert "ranks that arrived: [0, 2]" in out, out


def test_debug_mode_reports_shape_mismatch():
    res = run_program(PROGRAMS + "collective_shape_mismatch", n=2, timeout=40,
                      env={"SHARDFLOW_DEBUG": "collectives", "SHARDFLOW_COMM_TIMEOUT": "20"})
    _assert_fast_and_clean(res, 20)
    out = res.stderr
    assert "collective mismatch" in out, res.output
    assert "rank 0: all_reduce(shape=(3, 4)" in out and "rank 1: all_reduce(shape=(4, 4)" in out, out


def test_launcher_root_cause_block():
    res = launch_cli(["-n", "2", str(SCRIPTS / "rank_raises.py")], timeout=40)
    _assert_fast_and_clean(res, 20)
    assert res.returncode == 1
    assert "first failing rank: 1" in res.stderr, res.output
    assert "ValueError: deliberate failure on rank 1" in res.stderr
    assert "[rank 1] " in res.stderr


def test_launcher_killed_rank_and_job_timeout(tmp_path):
    res = launch_cli(["-n", "2", str(SCRIPTS / "rank_killed_mid_allreduce.py")], timeout=40)
    _assert_fast_and_clean(res, 20)
    assert "first failing rank: 1   exit code: 3" in res.stderr, res.output
    assert res.returncode == 3
    hang = tmp_path / "hang.py"
    hang.write_text("import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    # the job hangs for good, so the smallest --timeout that lets its ranks start is enough
    # (CI time: it is waited out; 4 s before)
    res = launch_cli(["-n", "2", "--timeout", "2", str(hang)], timeout=40)
    _assert_fast_and_clean(res, 15)
    assert res.returncode == 124 and "exceeded --timeout" in res.stderr, res.output


def test_launcher_success_prefixes_and_module(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("import sys\nimport shardflow.distributed as d\nd.init_process_group()\n"
                      "print('hi', d.get_rank(), sys.argv[1:])\n")
    res = launch_cli(["-n", "2", str(script), "--flag", "x"], timeout=40)
    assert res.returncode == 0, res.output
    for k in range(2):
        assert f"[rank {k}] hi {k} ['--flag', 'x']" in res.stdout, res.output
    res = launch_cli(["-n", "2", "-m", "json.tool", "--help"], timeout=40)
    assert res.returncode == 0 and res.stdout.count("[rank ") >= 2, res.output


def test_init_process_group_timeout_argument_bounds_a_hang():
    res = run_program(PROGRAMS + "timeout_argument_honoured", n=2, timeout=40)
    _assert_fast_and_clean(res, 20)
    out = res.stderr
    assert "collective timed out on rank 0: all_reduce" in out and "limit 2 s" in out, res.output
    assert "ranks that did not arrive: rank 1" in out, out
