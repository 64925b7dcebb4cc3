"""Session 34's fault probes: a user's distributed mistake ends the job (or raises on every
rank) naming the rank, the operation and the fix, within a bounded time.

* ``programs/faults_s34_caught.py`` (one 2-rank launch): reduce / gather with another dst per
  rank (a collective mismatch naming both roots; they completed silently), recv / irecv /
  recv_object_list without src (torch's any-source receive; it was a TypeError),
  all_to_all_single with split sizes (torch's values; mismatched sizes raise on every rank
  naming both ranks; dim 0 not divisible: torch's RuntimeError),
  Work.wait(timeout=timedelta), fully_shard over models that differ (naming the parameter
  and both shapes), DDP(device_ids=[0]) on a CPU module (torch's ValueError);
* a recv from any rank that nobody sends to ends the job at the group's timeout with a
  report that says so;
* in a world of one, against torch's gloo: an unpicklable object, a scatter_list of another
  dtype, a root outside the group, an unknown init_method scheme: torch's exception types.
"""

import pytest

from shardflow.testing.mpi import launch_cli, run_program

PROGRAMS = "tests.distributed.programs."
CASES = ["reduce_dst", "gather_dst", "recv_any_source", "a2a_uneven", "a2a_splits_mismatch",
         "a2a_splits_sum", "a2a_indivisible", "wait_timedelta", "fsdp_models_differ", "ddp_device_ids_cpu"]

ANY_SOURCE_NEVER_SENT = """
import datetime, time, shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=1))
if dist.get_rank() == 0:
    dist.recv(torch.zeros(2))
time.sleep(5)  # rank 1: not in a collective, so rank 0's timeout is the one reported
dist.barrier()
"""


@pytest.mark.mpi
def test_caught_mistakes_raise_on_every_rank_and_the_job_goes_on():
    # a 20 s collective limit: every case must raise by itself, not by the watchdog
    res = run_program(PROGRAMS + "faults_s34_caught", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "20"}).check()
    for case in CASES:
        for rank in (0, 1):
            assert f"OK {case} {rank}" in res.stdout, (case, rank, res.output)
    assert res.elapsed < 15, res.elapsed


@pytest.mark.mpi
def test_recv_from_any_rank_that_nobody_sends_to_ends_the_job_at_the_timeout(tmp_path):
    script = tmp_path / "any_source.py"
    script.write_text(ANY_SOURCE_NEVER_SENT)
    res = launch_cli(["-n", "2", str(script)], timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out and res.elapsed < 20, (res.elapsed, res.output)
    assert res.returncode != 0, res.output
    assert ("recv from any rank (src=None) timed out on rank 0 (tag 0, shape (2,), dtype "
            "float32)" in res.output), res.output
    assert "no rank sent to it with this tag" in res.output, res.output
    assert "rank 1: has made no point-to-point call" in res.output, res.output  # the others


def _cases(lib, dist):
    """(name, call) of mistakes a world of one can make, the same for torch and shardflow."""
    t = lib.zeros(2)
    return [
        ("unpicklable object", lambda: dist.all_gather_object([None], lambda: 1)),
        ("scatter_list of another dtype",
         lambda: dist.scatter(t, [lib.ones(2, dtype=lib.float64)], src=0)),
        ("reduce to rank 5", lambda: dist.reduce(t, dst=5)),
        ("gather to rank 5", lambda: dist.gather(t, None, dst=5)),
        ("scatter from rank 7", lambda: dist.scatter(t, None, src=7)),
        ("broadcast from rank -1", lambda: dist.broadcast(t, src=-1)),
        ("all_gather into a list of another shape", lambda: dist.all_gather([lib.zeros(3)], t)),
        ("all_gather into a list of another dtype",
         lambda: dist.all_gather([lib.zeros(2, dtype=lib.int64)], t)),
        ("reduce_scatter from a list of another shape",
         lambda: dist.reduce_scatter(lib.zeros(3), [lib.ones(2)])),
        ("all_gather_into_tensor of another size",
         lambda: dist.all_gather_into_tensor(lib.zeros(3), t)),
    ]


def test_mistakes_in_a_world_of_one_raise_torchs_types(tmp_path):
    """torch (gloo, a world of one in this process) and shardflow raise the same exception
    types, and shardflow's message names the operation."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    import shardflow
    import shardflow.distributed as dist

    with pytest.raises(RuntimeError, match="No rendezvous handler for bogus://") as theirs_bogus:
        tdist.init_process_group("gloo", init_method="bogus://x", rank=0, world_size=1)
    with pytest.raises(RuntimeError) as e:
        dist.init_process_group("gloo", init_method="bogus://x")
    assert str(e.value).startswith(str(theirs_bogus.value)[:34]), (e.value, theirs_bogus.value)
    assert "pass env://, tcp://HOST:PORT or file:///PATH" in str(e.value)
    assert not dist.is_initialized()

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
    dist.init_process_group("gloo", init_method="env://")
    try:
        for name, call in _cases(shardflow, dist):
            with pytest.raises(Exception) as e:
                call()
            assert type(e.value) is type(theirs[name]), (name, e.value, theirs[name])
        with pytest.raises(AttributeError, match="all_gather_object on rank 0: the object "
                           "could not be pickled .* pass plain data"):
            dist.all_gather_object([None], lambda: 1)
        with pytest.raises(ValueError, match="Invalid usage of tensors with different dtypes"):
            dist.scatter(shardflow.zeros(2), [shardflow.ones(2, dtype=shardflow.float64)], src=0)
        with pytest.raises(RuntimeError, match=r"reduce: invalid root rank: 5 \(the ranks are "):
            dist.reduce(shardflow.zeros(2), dst=5)
        with pytest.raises(RuntimeError, match=r"allgather: invalid tensor size at index 0 "
                           r"\(expected \(2,\), got \(3,\)\)"):
            dist.all_gather([shardflow.zeros(3)], shardflow.ones(2))
        kept = shardflow.zeros(2, dtype=shardflow.int64)
        with pytest.raises(ValueError, match="tensor_list.0. must have the input's dtype"):
            dist.all_gather([kept], shardflow.ones(2))
        assert kept.tolist() == [0, 0]  # nothing written (it was cast and written)
    finally:
        dist.destroy_process_group()
