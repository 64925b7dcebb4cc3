"""Session 37's fault probes: a user's distributed mistake ends the job naming the rank and
the operation, within a bounded time; where torch has an answer, torch's answer.

* a straggler: ``init_process_group(timeout=timedelta(seconds=2))`` on every rank, one rank
  late by 60 s. torch's rendezvous fails after ``timeout``; here the timeout was ignored by
  the start of the world (``SHARDFLOW_COMM_TIMEOUT``, 600 s by default, bounded it), so the
  job waited for the straggler. Now the waiting ranks end the job after ``timeout`` naming
  the rank that never reached ``init_process_group`` and the argument to raise.
* ``mp.spawn`` with a child killed by SIGKILL (an OOM kill): torch's
  ``ProcessExitedException`` has ``exit_code`` -9 and ``signal_name`` "SIGKILL"; here
  ``exit_code`` was mpiexec's 137.
"""

import pytest

import shardflow.multiprocessing as sf_mp
from shardflow.comm.mpi_init import init_timeout_report
from shardflow.testing.mpi import launch_cli
from tests import _spawn_targets as targets

STRAGGLER = """
import datetime, os, time
import shardflow as torch, shardflow.distributed as dist
if int(os.environ["RANK"]) == 1:
    time.sleep(60)  # a straggler: busy before init_process_group for longer than timeout=
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
dist.all_reduce(torch.ones(3))
print("INIT DONE", flush=True)
"""


@pytest.mark.mpi
def test_init_process_group_timeout_bounds_the_wait_for_a_straggler(tmp_path):
    script = tmp_path / "straggler.py"
    script.write_text(STRAGGLER)
    # the default 600 s limit would let the 60 s straggler arrive: only timeout= can end it
    res = launch_cli(["-n", "2", str(script)], timeout=90, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out, res.output
    assert res.elapsed < 40, f"took {res.elapsed:.0f} s\n{res.output}"
    assert res.returncode == 124, res.output
    assert "INIT DONE" not in res.output
    assert ("init_process_group did not complete on rank 0 within 2 s (init_process_group's "
            "timeout=)") in res.output, res.output
    assert "Rank(s) that never reached init_process_group: [1]" in res.output, res.output
    assert "raise init_process_group's timeout= if its start" in res.output


def test_the_init_report_names_what_set_the_limit():
    assert "within 600 s (SHARDFLOW_COMM_TIMEOUT)" in init_timeout_report(0, 2, 600, [0])
    msg = init_timeout_report(0, 2, 5, [0], "init_process_group's timeout=")
    assert "within 5 s (init_process_group's timeout=)" in msg
    assert "raise init_process_group's timeout= if" in msg


@pytest.mark.mpi
def test_a_spawned_child_killed_by_sigkill_has_torchs_exit_code():
    with pytest.raises(sf_mp.ProcessExitedException,
                       match=r"^process 1 terminated with signal SIGKILL \(it ended without") as e:
        sf_mp.spawn(targets.sigkill_on_one, nprocs=2)
    # torch 2.13: ProcessExitedException("process 1 terminated with signal SIGKILL"),
    # error_index 1, exit_code -9 (multiprocessing's exitcode), signal_name "SIGKILL"
    assert (e.value.error_index, e.value.exit_code, e.value.signal_name) == (1, -9, "SIGKILL")
    assert e.value.error_pid > 0
