"""faults9 (session 38): misuse of the distributed API gets torch's answer, bounded in time.

* ``new_group(ranks=[0, 5])`` on 2 ranks: torch 2.13 raises ``ValueError`` "Rank 5 is out of
  range. Valid ranks are 0 to 1 (world_size=2)" on every rank; shardflow said it in its own
  words ("new_group: ranks [5] are outside the group 0 .. 1").
* a recv whose buffer has another shape than the send: the message named the sender's own
  rank as ``peer=`` ("rank 0 sent send(shape=(3,), dtype=float32, peer=0)": rank 0 sent to
  rank 1).
* ``broadcast(t)`` / ``reduce(t)`` without ``src`` / ``dst``, ``all_reduce(t, group=5)``:
  torch's ``ValueError`` words (shardflow broadcast from rank 0, and raised an
  ``AttributeError`` for the int group).
* ``barrier(timeout=timedelta(seconds=2))`` with a late rank: torch's gloo fails after 2 s
  ("Timed out waiting 2000ms"); shardflow accepted the argument and ignored it, so the
  barrier waited up to the group's 600 s.
"""

import pytest

from shardflow.testing.mpi import launch_cli

CAUGHT = """
import shardflow as torch, shardflow.distributed as dist
from shardflow.comm import CommError
dist.init_process_group("gloo")
rank = dist.get_rank()
try:
    dist.new_group(ranks=[0, 5])
except ValueError as e:
    print("NEW_GROUP:", e, flush=True)
if rank == 0:
    dist.send(torch.ones(3), 1)
else:
    buf = torch.zeros(4)
    try:
        dist.recv(buf, 0)
    except CommError as e:
        print("RECV:", e, flush=True)
    assert buf.tolist() == [0.0] * 4  # nothing written
t = torch.full((3,), float(rank))
for name, call in (("BROADCAST", lambda: dist.broadcast(t)), ("REDUCE", lambda: dist.reduce(t)),
                   ("GROUP", lambda: dist.all_reduce(t, group=5))):
    try:
        call()
    except ValueError as e:
        print(f"{name}:", e, flush=True)
assert t.tolist() == [float(rank)] * 3  # refused before any communication
dist.barrier()  # both ranks go on: nothing was left half-done
print("CAUGHT OK", flush=True)
"""

LATE_FOR_BARRIER = """
import datetime, time
import shardflow.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
if dist.get_rank() == 1:
    time.sleep(60)  # late for the next barrier by far more than its timeout
dist.barrier(timeout=datetime.timedelta(seconds=2))
print("PASSED THE BARRIER", flush=True)
"""


def _run(tmp_path, program, timeout=60):
    script = tmp_path / "prog.py"
    script.write_text(program)
    return launch_cli(["-n", "2", "--timeout", "60", str(script)], timeout=timeout)


@pytest.mark.mpi
def test_new_group_out_of_range_and_a_recv_of_another_shape(tmp_path):
    res = _run(tmp_path, CAUGHT)
    out = res.output
    assert res.returncode == 0, out
    assert out.count("CAUGHT OK") == 2, out
    msg = ("NEW_GROUP: Rank 5 is out of range. Valid ranks are 0 to 1 (world_size=2); "
           "new_group(ranks=[0, 5]) takes global ranks of the world")
    assert out.count(msg) == 2, out
    assert "or launch more ranks (shardflow run -n 6)" in out, out
    assert ("RECV: recv from rank 0 (tag 0) on rank 1: rank 0 sent send(shape=(3,), "
            "dtype=float32) but this rank's recv expects shape=(4,), dtype=float32") in out, out
    assert "peer=" not in out, out
    # torch 2.13 (gloo): broadcast / reduce without src / dst raise ValueError "Must specify
    # global_rank or group_rank" (shardflow broadcast from rank 0); group=5 raises ValueError
    # "Process group 5 is not initialized in the world group map. Please initialize the group
    # first." (shardflow: AttributeError "'int' object has no attribute 'all_reduce'")
    assert out.count("BROADCAST: Must specify global_rank or group_rank (broadcast: pass src=") == 2
    assert out.count("REDUCE: Must specify global_rank or group_rank (reduce: pass dst=") == 2
    assert out.count("GROUP: Process group 5 is not initialized in the world group map. Please "
                     "initialize the group first.") == 2, out


@pytest.mark.mpi
def test_barrier_timeout_is_honoured_and_names_the_late_rank(tmp_path):
    res = _run(tmp_path, LATE_FOR_BARRIER)
    out = res.output
    assert not res.timed_out, out
    assert res.elapsed < 30, f"took {res.elapsed:.0f} s (the 2 s timeout= was ignored)\n{out}"
    assert res.returncode == 124 and "PASSED THE BARRIER" not in out, out
    assert "collective timed out on rank 0: barrier (collective #2 on a group of 2) waited" in out
    assert "ranks that did not arrive: rank 1 (last started collective #1 (barrier()))" in out
    # the limit's source is the call's own argument (it said "the group's timeout= or
    # SHARDFLOW_COMM_TIMEOUT", which the user had not set)
    assert "(limit 2 s: this call's timeout=: barrier(timeout=) or work.wait(timeout=))" in out


TAGS_DIFFER_THEN_EXIT = """
import shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.send(torch.ones(3), 1, tag=1)  # completes (a small message), then rank 0 ends
else:
    dist.recv(torch.zeros(3), 0, tag=2)
print("RECEIVED", flush=True)
"""


@pytest.mark.mpi
def test_a_sender_that_exits_while_the_recv_waits_on_another_tag_ends_the_job(tmp_path):
    # the counters agree (1 send, 1 recv), so the exiting sender used to finalise and the
    # receiver waited for its recv until the collective timeout (600 s here)
    script = tmp_path / "prog.py"
    script.write_text(TAGS_DIFFER_THEN_EXIT)
    res = launch_cli(["-n", "2", "--timeout", "60", str(script)], timeout=90,
                     env={"SHARDFLOW_COMM_TIMEOUT": "600"})
    out = res.output
    assert not res.timed_out and res.elapsed < 30, f"took {res.elapsed:.0f} s\n{out}"
    assert res.returncode != 0 and out.count("RECEIVED") == 1, out  # rank 0 only
    assert ("rank 0 is exiting (its script ended or called sys.exit()) while rank 1 waits in "
            "recv from rank 0 (tag 2, 3 elements of float32), which no send of rank 0 matches "
            "(it sent 1 message(s) to rank 1, the last with tag 1, 3 elements of float32; the "
            "tags differ") in out, out


def test_a_head_to_head_recv_timeout_says_it_is_a_deadlock():
    # both ranks call dist.recv from the other first; the timeout report named the peer's
    # recv but not that each waits for the other
    import numpy as np

    from shardflow.comm import arrival, callsig

    row = np.zeros(arrival.HEAD, dtype=np.int64)
    row[14] = -1
    row[17:24] = [callsig.OPCODES["recv"], 0, 0, 3, callsig.dtype_code(np.float32), 1, 1]
    peer = arrival.decode_slot(row, 2)
    msg = arrival.p2p_timeout_report(rank=0, op="recv", peer_world=1, tag=0, shape=(3,),
                                     dtype="float32", waited=5.0, limit=5, peer_state=peer)
    assert "rank 1: last point-to-point call: recv from rank 0 (tag 0, 3 elements of " \
        "float32; waiting in it)" in msg, msg
    assert ("A deadlock: rank 0 and rank 1 each wait to receive from the other. One side must "
            "send first") in msg, msg
    row[17] = callsig.OPCODES["send"]  # the peer sends: no deadlock, its send just waits
    assert "deadlock" not in arrival.p2p_timeout_report(
        rank=0, op="recv", peer_world=1, tag=0, shape=(3,), dtype="float32", waited=5.0,
        limit=5, peer_state=arrival.decode_slot(row, 2))
