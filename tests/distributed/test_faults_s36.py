"""Session 36's fault probes: a user's distributed mistake ends the job (or raises on every
rank) naming the rank, the operation and the fix, within a bounded time; where torch has an
answer that is not an error, torch's answer.

* ``programs/faults_s36_caught.py`` (one 2-rank launch): collectives on a rank outside the
  group (torch's warning and no-op, ``get_rank(g) == -1``), a destroyed group used again
  (torch's ValueError; it was a segmentation fault), a negative p2p tag (torch's
  RuntimeError; both ranks hung), a collective of the program's own inside DDP's
  ``join()`` block (a note naming the cause), DDP with uneven inputs meeting a collective
  after the loop (the report names DDP's gradient all_reduce and ``join()``), ``dcp.save`` on one rank meeting
  ``dcp.load`` on the other (a CheckpointException naming each rank's step; it was
  unrelated TypeErrors), an async Work waited after its group's destroy and a DDP model
  trained after ``destroy_process_group()`` (both were segmentation faults);
* a 3-rank job whose rank 0 waits in a sub-group's all_reduce while the others wait in the
  world's barrier: the world's timeout report names the sub-group call rank 0 waits in (it
  named only rank 0's last world collective, the new_group);
* a recv whose peer sent with another tag: the timeout report says the tags differ;
* in this process, against torch: a ``TCPStore`` master on a port another process listens on
  raises torch's ``DistNetworkError`` (it was the bare ``OSError``).
"""

import socket
from datetime import timedelta

import pytest

from shardflow.testing.mpi import launch_cli, run_program

SUBGROUP_WAIT_BLOCKS_THE_WORLD = """
import datetime, shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=60))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(2), group=g)  # rank 1 never joins it: it is in the barrier
dist.barrier()
"""

RECV_WITH_ANOTHER_TAG = """
import datetime, time, shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
t = torch.ones(3)
if dist.get_rank() == 0:
    dist.send(t, 1, tag=1)
    time.sleep(30)  # not in a call: rank 1's timeout is the one reported
else:
    dist.recv(t, 0, tag=2)
"""

CASES = ["outside_group", "destroyed_group", "destroyed_group_world", "p2p_bad_tag",
         "join_own_collective", "join_own_collective_generic", "ddp_uneven_then_collective", "dcp_on_one_rank",
         "used_after_destroy_work", "used_after_destroy"]


@pytest.mark.mpi
def test_caught_mistakes_raise_on_every_rank_and_answers_match_torch(tmp_path):
    # a 20 s collective limit: every case must raise by itself, not by the watchdog
    res = run_program("tests.distributed.programs.faults_s36_caught", n=2, timeout=60,
                      args=[str(tmp_path / "ckpt")], env={"SHARDFLOW_COMM_TIMEOUT": "20"}).check()
    for case in CASES:
        for rank in (0, 1):
            assert f"OK {case} {rank}" in res.stdout, (case, rank, res.output)
    assert res.elapsed < 40, res.elapsed  # a case left to the 20 s watchdog would abort


def test_a_tcpstore_master_on_a_taken_port_raises_torchs_dist_network_error():
    tdist = pytest.importorskip("torch.distributed")

    import shardflow.distributed as dist

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError) as theirs:
            tdist.TCPStore("127.0.0.1", port, 1, True, timeout=timedelta(seconds=2))
        with pytest.raises(dist.DistNetworkError) as ours:
            dist.TCPStore("127.0.0.1", port, 1, True, timeout=timedelta(seconds=2))
    assert type(theirs.value).__name__ == "DistNetworkError"
    assert isinstance(ours.value, RuntimeError)
    text = str(ours.value)
    assert text.startswith("The server socket has failed to listen on any local network "
                           f"address. port: {port}, useIpv6: false, code: -98, name: "
                           "EADDRINUSE"), text
    assert str(theirs.value).startswith(text[:text.index("message")])  # torch's words
    assert "pass port=0 and read store.port" in text


def test_a_wrong_world_size_or_rank_in_a_world_of_one_raises_before_the_world_is_made():
    import shardflow.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(ValueError, match=r"world_size=2\) but the launcher started 1 rank"):
        dist.init_process_group("gloo", world_size=2)
    assert not dist.is_initialized()  # nothing was made: the program may init again
    with pytest.raises(ValueError, match=r"rank=1\) but this process is rank 0 of 1: rank 1 is "
                                         r"not in 0 \.\. 0\. The launcher assigns the ranks"):
        dist.init_process_group("gloo", rank=1, world_size=1)
    assert not dist.is_initialized()
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("num_replicas, rank", [(2, 2), (2, -1), (3, 7)])
def test_distributed_sampler_rank_outside_num_replicas_raises_torchs_value_error(num_replicas,
                                                                                 rank):
    tdata = pytest.importorskip("torch.utils.data")
    from shardflow.utils.data import DistributedSampler

    with pytest.raises(ValueError) as theirs:
        tdata.DistributedSampler(list(range(10)), num_replicas=num_replicas, rank=rank)
    with pytest.raises(ValueError) as ours:
        DistributedSampler(list(range(10)), num_replicas=num_replicas, rank=rank)
    assert str(ours.value).startswith(str(theirs.value) + " (rank is this process's index"), (
        ours.value, theirs.value)
    assert "rank=dist.get_rank()" in str(ours.value)


def test_distributed_sampler_non_int_rank_raises_at_construction():
    from shardflow.utils.data import DistributedSampler

    # torch accepts them and fails in __iter__ ("slice indices must be integers ...")
    with pytest.raises(TypeError, match=r"^rank must be an int, got float 1\.5; pass e\.g\. "
                                        r"rank=dist\.get_rank\(\)"):
        DistributedSampler(list(range(10)), num_replicas=2, rank=1.5)
    with pytest.raises(TypeError, match=r"^num_replicas must be an int, got str '2'"):
        DistributedSampler(list(range(10)), num_replicas="2", rank=0)
    assert list(DistributedSampler(list(range(4)), num_replicas=2, rank=1, shuffle=False)) == [1, 3]


def test_init_with_a_cuda_device_id_on_a_cpu_machine_or_world_size_0_raises_before_init():
    import shardflow
    import shardflow.distributed as dist

    if shardflow.cuda.is_available():
        pytest.skip("a CUDA device is visible: device_id='cuda:0' is valid here")
    with pytest.raises(ValueError, match=r"^device_id cuda:0 does not match the current "
                                         r"compilation's accelerator support: None\. .*leave "
                                         r"device_id out to run on the CPU"):
        dist.init_process_group("gloo", device_id=shardflow.device("cuda:0"))
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match=r"world_size=0\): the world size must be a positive"):
        dist.init_process_group("gloo", world_size=0, rank=0)
    assert not dist.is_initialized()


@pytest.mark.mpi
def test_a_world_timeout_names_the_sub_group_collective_a_missing_rank_waits_in(tmp_path):
    script = tmp_path / "subgroup_wait.py"
    script.write_text(SUBGROUP_WAIT_BLOCKS_THE_WORLD)
    res = launch_cli(["-n", "3", str(script)], timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out and res.elapsed < 20, (res.elapsed, res.output)
    assert res.returncode == 124, res.output
    # ranks 1 and 2 time out in the world's barrier (2 s; the sub-group's limit is 60 s)
    assert "collective timed out on rank 1: barrier" in res.output or \
        "collective timed out on rank 2: barrier" in res.output, res.output
    assert ("ranks that did not arrive: rank 0 (last started collective #1 (new_group(ranks=[0, "
            "1])); now waits in all_reduce(shape=(2,), dtype=float32, op=sum) as collective #1 "
            "of another group, of 2 ranks [0, 1])") in res.output, res.output


def test_destroy_process_group_without_a_group_raises_torchs_assertion_error():
    tdist = pytest.importorskip("torch.distributed")
    import shardflow.distributed as dist

    with pytest.raises(AssertionError) as theirs:
        tdist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(AssertionError) as ours:
        dist.destroy_process_group()  # it made a world only to free it
    assert str(ours.value).startswith(str(theirs.value) + " (destroy_process_group(): no "), ours
    assert "check dist.is_initialized() first" in str(ours.value)
    assert not dist.is_initialized()
    dist.init_process_group("gloo")
    dist.destroy_process_group()
    with pytest.raises(AssertionError, match="is destroyed already"):
        dist.destroy_process_group()  # twice


@pytest.mark.mpi
def test_a_recv_timeout_says_the_tags_differ(tmp_path):
    script = tmp_path / "recv_other_tag.py"
    script.write_text(RECV_WITH_ANOTHER_TAG)
    res = launch_cli(["-n", "2", str(script)], timeout=60, env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    assert not res.timed_out and res.elapsed < 20, (res.elapsed, res.output)
    assert res.returncode == 124, res.output
    assert "recv from rank 0 timed out on rank 1 (tag 2" in res.output, res.output
    assert ("The tags differ: rank 0's send uses tag 1, this recv tag 2; pass the same tag on "
            "both sides.") in res.output, res.output
