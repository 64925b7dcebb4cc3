"""Session 35's fault probes: a user's distributed mistake ends the job (or raises on every
rank) naming the rank, the operation and the fix, within a bounded time.

* ``programs/faults_s35_caught.py`` (one 2-rank launch): AVG of an int tensor, a broadcast of
  another dtype per rank, DDP's requires_grad differing across ranks, static_graph whose graph
  changes, find_unused_parameters with none unused, join(throw_on_early_termination),
  ZeroRedundancyOptimizer.state_dict without / away from consolidate_state_dict, a P2POp of
  a wrong op; and torch's values for non-contiguous / bool / complex collectives, differing
  buffers, a static graph, SyncBatchNorm with uneven batches and batch 1;
* ``full_tensor()`` on one rank ends the job at the group's timeout, the report naming the
  program's own call (file, line, source) as well as the collective;
* ``shardflow run`` with a script that does not exist refuses before any rank starts;
* ``mp.spawn`` with a child that ``os._exit(3)``s names that child, as torch does;
* in this process, against torch: the exception types of AVG of an int tensor (a world of
  one) and of a P2POp of a wrong op.
"""

import pytest

import shardflow.multiprocessing as sf_mp
from shardflow.cli import run as run_cli
from shardflow.distributed import run as torchrun
from shardflow.testing.mpi import launch_cli, run_program
from tests import _spawn_targets as targets

CASES = ["avg_int", "collective_values", "broadcast_dtype", "p2p_wrong_op", "ddp_buffers_differ",
         "ddp_requires_grad", "ddp_static_graph_changes", "ddp_find_unused_all_used",
         "ddp_join_throw", "zero_not_consolidated", "zero_consolidated_elsewhere",
         "sync_batchnorm"]

FULL_TENSOR_ON_ONE_RANK = """
import datetime, time, shardflow as torch, shardflow.distributed as dist
from shardflow.distributed.device_mesh import init_device_mesh
from shardflow.distributed.tensor import Shard, distribute_tensor
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=1))
d = distribute_tensor(torch.ones(4, 2), init_device_mesh("cpu", (2,)), [Shard(0)])
if dist.get_rank() == 0:
    d.full_tensor()
time.sleep(5)  # rank 1: not in a collective, so rank 0's timeout is the one reported
dist.barrier()
"""


@pytest.mark.mpi
def test_caught_mistakes_raise_on_every_rank_and_values_match_torch():
    # a 20 s collective limit: every case must raise by itself, not by the watchdog
    res = run_program("tests.distributed.programs.faults_s35_caught", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "20"}).check()
    for case in CASES:
        for rank in (0, 1):
            assert f"OK {case} {rank}" in res.stdout, (case, rank, res.output)
    assert res.elapsed < 40, res.elapsed  # a case left to the 20 s watchdog would abort


@pytest.mark.mpi
def test_a_collective_on_one_rank_names_the_programs_call(tmp_path):
    script = tmp_path / "full_tensor_one_rank.py"
    script.write_text(FULL_TENSOR_ON_ONE_RANK)
    res = launch_cli(["-n", "2", str(script)], timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out and res.elapsed < 20, (res.elapsed, res.output)
    assert res.returncode == 124, res.output
    assert "collective timed out on rank 0: all_gather (collective #1" in res.output, res.output
    assert "ranks that did not arrive: rank 1" in res.output, res.output
    assert ("rank 0 waits in: full_tensor() called at " in res.output
            and "full_tensor_one_rank.py:8: d.full_tensor()" in res.output), res.output


def test_a_script_that_does_not_exist_is_refused_before_any_rank_starts(tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["python", "nope.py"], ["nope.py", "--lr", "1"]):
        assert run_cli.main(["-n", "2", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("shardflow run: the script 'nope.py' does not exist (looked in "
                              f"{tmp_path}); no rank was started"), err
    # torchrun's command line: translated to the same launcher, so the same check
    run_args, _ = torchrun.shardflow_run_argv(["--nproc-per-node=2", "nope.py"])
    assert run_cli.main(run_args) == 2
    assert "the script 'nope.py' does not exist" in capsys.readouterr().err


@pytest.mark.mpi
def test_a_child_that_os_exits_is_named_with_its_index_pid_and_code():
    # rank 0 is sleeping when rank 1 exits: mpiexec stops it, and only rank 1 is named
    with pytest.raises(sf_mp.ProcessExitedException,
                       match=r"^process 1 terminated with exit code 3 \(it ended without "
                             r"raising a Python exception") as e:
        sf_mp.spawn(targets.os_exit_on_one, nprocs=2)
    assert (e.value.error_index, e.value.exit_code) == (1, 3)
    assert e.value.error_pid > 0


def test_avg_of_ints_and_a_wrong_p2p_op_raise_torchs_types(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    import shardflow
    import shardflow.distributed as dist

    with pytest.raises(ValueError) as theirs_op:
        tdist.P2POp(tdist.all_reduce, torch.zeros(2), 1)
    with pytest.raises(ValueError, match="P2POp's op must be dist.isend or dist.irecv"):
        dist.P2POp(dist.all_reduce, shardflow.zeros(2), 1)
    assert type(theirs_op.value) is ValueError
    tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0,
                             world_size=1)
    try:
        with pytest.raises(Exception) as theirs:
            tdist.all_reduce(torch.ones(2, dtype=torch.int64), op=tdist.ReduceOp.AVG)
    finally:
        tdist.destroy_process_group()
    dist.init_process_group("gloo", init_method="env://")
    try:
        t = shardflow.ones(2, dtype=shardflow.int64)
        with pytest.raises(Exception) as ours:
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
        assert "can't be cast to the desired output type" in str(ours.value)
        assert t.tolist() == [1, 1]
    finally:
        dist.destroy_process_group()
