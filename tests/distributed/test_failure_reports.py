"""Failure reports name the rank at fault and what it did.

* a rank that calls ``sys.exit(1)`` (or ends its script) while another waits for it is
  reported with its own rank and exit code, at once, not as the waiting rank's timeout;
  ranks that merely finish at different times still exit 0;
* ranks calling different collectives are reported with what each called;
* a recv that times out names its peer and what the peer did instead, never itself.
"""

from pathlib import Path

import pytest

from shardflow.comm import arrival, callsig
from shardflow.testing.mpi import launch_cli, run_program

pytestmark = pytest.mark.mpi

NO_TIMEOUT = {"SHARDFLOW_COMM_TIMEOUT": "600"}  # nothing here may rely on the comm timeout

PROGRAMS = "tests.distributed.programs."
# run as a plain script by the launcher test (it ends with a __main__ block)
EXITS_SCRIPT = Path(__file__).parent / "programs" / "rank_exits_while_awaited.py"


def _fast(res, bound=25):
    assert not res.timed_out, res.output
    assert res.elapsed < bound, f"took {res.elapsed:.1f}s\n{res.output}"
    assert not res.leftover, res.leftover


@pytest.mark.parametrize("where", ["collective", "recv"])
def test_early_exit_reports_that_rank_and_its_exit_code(where):
    res = launch_cli(["-n", "2", str(EXITS_SCRIPT), "1", where], timeout=60, env=NO_TIMEOUT)
    _fast(res)
    assert res.returncode == 1, res.output
    assert "first failing rank: 1   exit code: 1" in res.stderr, res.output
    assert "timed out" not in res.output, res.output
    assert "rank 1 is exiting" in res.stderr and "rank 0 waits" in res.stderr, res.output


def test_early_exit_under_plain_mpiexec():
    res = run_program(PROGRAMS + "rank_exits_while_awaited", n=3, timeout=60, env=NO_TIMEOUT,
                      args=[3, "collective"])
    _fast(res)
    assert res.returncode != 0
    assert "Exit code:    3" in res.output, res.output
    assert "rank 1 is exiting" in res.stderr and "collective #2" in res.stderr, res.output


def test_ranks_ending_at_different_times_still_exit_cleanly():
    res = run_program(PROGRAMS + "ranks_end_at_different_times", n=3, timeout=60,
                      env=NO_TIMEOUT).check()
    assert res.stdout.count("done") == 3 and "exiting" not in res.output, res.output


def test_a_group_dropped_on_one_rank_does_not_hang_the_exit():
    res = run_program(PROGRAMS + "group_dropped_on_one_rank", n=2, timeout=60,
                      env=NO_TIMEOUT).check()
    assert res.stdout.count("done") == 2 and "exiting" not in res.output, res.output
    assert res.elapsed < 30, res.elapsed


def test_op_mismatch_names_what_each_rank_called():
    res = run_program(PROGRAMS + "ranks_call_different_collectives", n=3, timeout=60,
                      env=NO_TIMEOUT)
    _fast(res)
    out = res.stderr
    assert "collective mismatch at collective #2" in out, res.output
    assert "rank 1: all_gather(shape=(3,), dtype=float64) as collective #2   <- differs" in out
    assert "rank 0: all_reduce(shape=(3,), dtype=float64, op=sum) as collective #2" in out
    assert "did not arrive: none" not in out


def test_recv_timeout_names_the_peer_and_what_it_did():
    res = run_program(PROGRAMS + "recv_times_out", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "3"})
    _fast(res)
    out = res.stderr
    assert "recv from rank 1 timed out on rank 0 (tag 0, shape (3,), dtype float32)" in out, out
    assert ("rank 1: last point-to-point call: send to rank 0 (tag 5, 3 elements of float32; "
            "completed)") in out, out
    assert "ranks that did not arrive" not in out, out


def _state(seq, sig=None, waiting=-1):
    return arrival.RankState(seq, sig, waiting, 1, arrival.PHASE_RUNNING,
                             (0, 0, 0, 0, 0, 0, 0))


def _sig(op, seq, shape=(3,), dtype="float32", reduce=None):
    return callsig.CallSig(*callsig.fields(op, seq, reduce, dtype, 3, -1, shape)[:7],
                           tuple(callsig.fields(op, seq, reduce, dtype, 3, -1, shape)[7:]))


def test_timeout_report_separates_absent_ranks_from_other_calls():
    mine = _sig("all_reduce", 2, reduce="sum")
    states = [_state(2, mine, waiting=2),               # the waiting rank itself
              _state(2, _sig("all_gather", 2), waiting=2),
              _state(1, _sig("all_reduce", 1, reduce="sum")),
              None]
    text = arrival.collective_timeout_report(
        rank=0, op="all_reduce", seq=2, size=4, shape=(3,), dtype="float32", waited=3.0,
        limit=3.0, states=states, world_ranks=[0, 1, 2, 3])
    assert ("ranks that did not arrive: rank 2 (last started collective #1 "
            "(all_reduce(shape=(3,), dtype=float32, op=sum)))") in text, text
    assert ("ranks that called something else as collective #2: rank 1: "
            "all_gather(shape=(3,), dtype=float32)") in text, text
    assert "could not be read: rank 3" in text and "ranks that arrived: [0]" in text, text
    assert "rank 0 (" not in text, text  # the waiting rank is never listed as absent
