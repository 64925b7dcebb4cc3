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
* in this process (a mesh of one): DTensor placements of the wrong length for the mesh, and
  ``Shard(dim)`` outside the tensor's dims, raise torch's ``ValueError`` / ``IndexError`` and
  words (they were sbp-worded ``ValueError`` errors).
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


def test_dtensor_placements_that_do_not_fit_raise_torchs_errors():
    # torch 2.13's words (probed on 2 gloo ranks): distribute_tensor with 2 placements on a
    # 1-d mesh: ValueError "`placements` must have the same length as `device_mesh.ndim`!
    # Found placements length: 2, and device_mesh.ndim: 1."; Shard(2) of a 2-d tensor:
    # IndexError "Dimension out of range (expected to be in range of [-2, 1], but got 2)".
    # shardflow said it in sbp words ("one sbp per mesh dimension is needed ..."), and a
    # ValueError for the dim
    import shardflow
    from shardflow.distributed.device_mesh import init_device_mesh
    from shardflow.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (1,))
    x = shardflow.arange(8.0).reshape(4, 2)
    length = (r"^`placements` must have the same length as `device_mesh.ndim`! Found placements "
              r"length: 2, and device_mesh.ndim: 1\. \({}: pass one placement per mesh dimension")
    with pytest.raises(ValueError, match=length.format("distribute_tensor")):
        distribute_tensor(x, mesh, [Shard(0), Replicate()])
    d = distribute_tensor(x, mesh, [Shard(0)])
    with pytest.raises(ValueError, match=length.format("redistribute")):
        d.redistribute(mesh, [Replicate(), Replicate()])
    with pytest.raises(ValueError, match=length.format(r"DTensor\.from_local")):
        DTensor.from_local(shardflow.ones(2, 2), mesh, [Shard(0), Shard(1)])
    out_of_range = (r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got "
                    r"{0}\) \({1}: Shard\({0}\) of a tensor of 2 dimension\(s\); shard a dim in "
                    r"\[0, 1\] or use Replicate\(\)\)")
    with pytest.raises(IndexError, match=out_of_range.format(2, "distribute_tensor")):
        distribute_tensor(x, mesh, [Shard(2)])
    with pytest.raises(IndexError, match=out_of_range.format(-3, "redistribute")):
        d.redistribute(mesh, [Shard(-3)])
    assert distribute_tensor(x, mesh, [Shard(-1)]).placements == (Shard(1),)  # as torch
    assert d.redistribute(mesh, [Replicate()]).full_tensor().tolist() == x.tolist()


@pytest.mark.parametrize("arrived, waited, says", [
    ([0], (0.3, 1.2), "within 0.3 s (init_process_group's timeout=): starting MPI waits for all "
                      "2 ranks. Rank(s) that never reached init_process_group: [1]"),
    ([0, 1], (1.5, 4.0), "within 1.5 s (SHARDFLOW_COMM_TIMEOUT): starting MPI waits for all 2 "
                         "ranks. Every rank reached init_process_group")])
def test_init_timeout_bounds_a_straggler_not_mpis_own_start(tmp_path, monkeypatch, capfd,
                                                            arrived, waited, says):
    # the init watchdog's wait, run here: with timeout= 0.3 s and SHARDFLOW_COMM_TIMEOUT
    # 1.5 s, a rank that never arrived ends the start after 0.3 s; when every rank has
    # arrived the start is MPI's own and may take up to 1.5 s (a loaded machine's start-up
    # must not fail a short timeout=)
    import os
    import subprocess
    import time

    from shardflow.comm.mpi_init import InitWatchdog

    monkeypatch.setenv("SHARDFLOW_FAILURE_DIR", str(tmp_path))
    for r in arrived:
        (tmp_path / f"init-arrived-rank{r}").write_text("")
    stand_in = subprocess.Popen(["sleep", "30"])  # the rank the watchdog ends
    read_end, write_end = os.pipe()
    try:
        watchdog = InitWatchdog(0.3, "init_process_group's timeout=", fallback=1.5)
        watchdog.rank, watchdog.world_size = 0, 2
        t0 = time.monotonic()
        watchdog._watch(read_end, stand_in.pid)
        took = time.monotonic() - t0
        assert stand_in.wait(timeout=10) == -9
    finally:
        stand_in.kill()
        os.close(read_end)
        os.close(write_end)
    assert waited[0] <= took < waited[1], took
    assert says in capfd.readouterr().err
