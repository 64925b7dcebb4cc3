"""Session 33's fault probes: a user's distributed mistake ends the job (or raises on every
rank) naming the rank, the operation and the fix, within a bounded time.

* ``programs/faults_s33_caught.py`` (one 2-rank launch): new_group skipped by a rank or
  called with other ranks (a checked collective now: it left the other rank in MPI's Split
  for ever), duplicate ranks (torch's ValueError), DDP over models that differ across
  ranks (torch's "DDP expects same model across all ranks"), gather_object with different
  dst, broadcast_object_list into a list of another length, monitored_barrier's timeout
  (torch's "Rank 1 failed to pass monitoredBarrier in N ms"; it was ignored);
* DDP with uneven batches and no join() (torch hangs): the rank that reaches
  destroy_process_group raises at once, naming the waiting rank, its all-reduce and join();
* in a world of one, against torch's gloo: init_process_group twice (torch's ValueError; it
  was a RuntimeError), list arguments of the wrong length (torch's RuntimeError; they were
  ValueErrors), a rooted collective's list missing on its root (torch's ValueError).
"""

from pathlib import Path

import pytest

from shardflow.testing.mpi import launch_cli, run_program

PROGRAMS = "tests.distributed.programs."
UNEVEN = Path(__file__).parent / "programs" / "ddp_uneven_without_join.py"
CASES = ["new_group_skipped", "new_group_other_ranks", "new_group_duplicates", "ddp_param_count",
         "ddp_param_shape", "gather_object_dst", "broadcast_object_list_length",
         "monitored_barrier_timeout", "monitored_barrier_bad_timeout"]


@pytest.mark.mpi
def test_caught_mistakes_raise_on_every_rank_and_the_job_goes_on():
    # a 20 s collective limit: every case must raise by itself, not by the watchdog
    res = run_program(PROGRAMS + "faults_s33_caught", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "20"}).check()
    for case in CASES:
        for rank in (0, 1):
            assert f"OK {case} {rank}" in res.stdout, (case, rank, res.output)
    assert res.elapsed < 15, res.elapsed


@pytest.mark.mpi
def test_ddp_uneven_batches_without_join_end_naming_both_ranks_and_join():
    res = launch_cli(["-n", "2", str(UNEVEN)], timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out and res.elapsed < 20, (res.elapsed, res.output)
    assert res.returncode == 1, res.output
    err = res.stderr
    assert "first failing rank: 1   exit code: 1" in err, res.output
    assert ("destroy_process_group on rank 1 while rank 0 waits for it in all_reduce("
            in err), res.output
    assert "with model.join():" in err and "timed out" not in res.output, res.output


def _cases(lib, dist):
    """(name, call) of mistakes a world of one can make, the same for torch and shardflow."""
    t = lib.ones(2)
    two = [lib.zeros(2), lib.zeros(2)]
    return [
        ("all_gather list of 2 in a world of 1", lambda: dist.all_gather(two, t)),
        ("reduce_scatter of 2 inputs", lambda: dist.reduce_scatter(t, two)),
        ("all_to_all of 2", lambda: dist.all_to_all(two, two)),
        ("scatter_list of 2", lambda: dist.scatter(t, two, src=0)),
        ("gather_list of 2", lambda: dist.gather(t, two, dst=0)),
        ("gather without gather_list on dst", lambda: dist.gather(t, None, dst=0)),
        ("scatter without scatter_list on src", lambda: dist.scatter(t, None, src=0)),
        ("init_process_group twice", lambda: dist.init_process_group("gloo")),
        ("new_group with duplicate ranks", lambda: dist.new_group([0, 0])),
    ]


def test_mistakes_in_a_world_of_one_raise_torchs_types(tmp_path):
    """torch (gloo, a world of one in this process) and shardflow raise the same exception
    types; where torch's is a ValueError, shardflow's message starts with torch's words."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    import shardflow
    import shardflow.distributed as dist

    tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0,
                             world_size=1)
    theirs = {}
    try:
        for name, call in _cases(torch, tdist):
            with pytest.raises(Exception) as e:
                call()
            theirs[name] = e.value
    finally:
        tdist.destroy_process_group()
    dist.init_process_group("gloo")
    try:
        for name, call in _cases(shardflow, dist):
            with pytest.raises(Exception) as e:
                call()
            assert type(e.value) is type(theirs[name]), (name, e.value, theirs[name])
            if isinstance(theirs[name], ValueError):
                assert str(e.value).startswith(str(theirs[name])), (name, e.value, theirs[name])
    finally:
        dist.destroy_process_group()
