"""faults9 (session 38): when ranks are killed, the launcher says what each was waiting in.

A rank killed by SIGKILL inside the job (session 37: "first failing rank: 1 exit code: -9"
and nothing about the others), a rank that raises while the others wait in a collective,
and a job stopped by ``--timeout`` while a rank hangs: the ranks still alive are killed
inside their MPI calls, where no Python runs, so only the launcher can tell. It now reads
each rank's mirrored arrival-board slot (``comm/board_file.py``) and prints, per rank, the
collective (op, shape, dtype, reduce op, group) it waited in and which ranks never started
it.
"""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from shardflow.comm import arrival, board_file, callsig
from shardflow.comm.launcher import kill_session
from shardflow.testing.mpi import launch_cli, rank_env

KILLED = """
import os, signal, time
import shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo")
dist.all_reduce(torch.ones(3))
if dist.get_rank() == 1:
    time.sleep(0.5)  # rank 0 is inside the next all_reduce by now
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer does
dist.all_reduce(torch.ones(4, 5))
print("SURVIVED", flush=True)
"""

RAISES_IN_DDP = """
import time
import shardflow as torch, shardflow.distributed as dist
from shardflow import nn
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
for step in range(2):
    if dist.get_rank() == 1 and step == 1:
        time.sleep(0.5)  # rank 0 waits in DDP's gradient all_reduce meanwhile
        raise ValueError("bad batch on rank 1")
    model(torch.randn(8, 4)).sum().backward()
print("SURVIVED", flush=True)
"""

HANGS = """
import time
import shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
print("STARTED", flush=True)
if dist.get_rank() == 1:
    time.sleep(1000)  # a hang outside any collective
dist.broadcast(torch.ones(2, 3, dtype=torch.float64), src=0)
"""


def _run(tmp_path, program, *args, timeout=60):
    script = tmp_path / "prog.py"
    script.write_text(program)
    return launch_cli(["-n", "2", *args, str(script)], timeout=timeout)


@pytest.mark.mpi
def test_a_rank_killed_inside_a_collective_the_survivor_names_the_collective(tmp_path):
    res = _run(tmp_path, KILLED, "--timeout", "60")
    out = res.output
    assert not res.timed_out and res.elapsed < 40, out
    assert res.returncode != 0 and "SURVIVED" not in out, out
    assert "first failing rank: 1   exit code: -9   (signal)" in out, out
    # session 37: the block ended here, without the survivor's operation
    assert ("rank 0: waiting for" in out and " in all_reduce(shape=(4, 5), dtype=float32, op=sum), "
            "collective #2 of the world group (2 ranks)") in out, out
    assert "rank 1 (the failing rank): in its own code" in out, out
    assert "collective #2 of the world: rank 0 waited in it, rank 1 never started it" in out, out


@pytest.mark.mpi
def test_a_rank_raising_while_the_other_waits_in_ddp_backward(tmp_path):
    res = _run(tmp_path, RAISES_IN_DDP, "--timeout", "60")
    out = res.output
    assert not res.timed_out and res.elapsed < 40, out
    assert res.returncode == 1 and "SURVIVED" not in out, out
    # the raising rank's traceback comes first, then why the other stopped
    tb = out.index("ValueError: bad batch on rank 1")
    waits = out.index("rank 0: waiting for")
    assert tb < waits, out
    assert "in all_reduce(shape=(10,), dtype=float32, op=avg), collective #" in out[waits:], out


@pytest.mark.mpi
def test_a_hang_stopped_by_timeout_names_the_rank_that_never_arrived(tmp_path):
    res = _run(tmp_path, HANGS, "--timeout", "10", timeout=60)
    out = res.output
    assert "STARTED" in out, out  # the hang began after the first collective
    assert res.returncode == 124, out
    assert "no rank failed by itself before --timeout stopped the job" in out, out
    assert " in broadcast(shape=(2, 3), dtype=float64, root=0), collective #2 of the world" in out
    assert "rank 1: in its own code, not in a collective or send/recv (last started collective #1 "\
        "(barrier()))" in out, out
    assert "collective #2 of the world: rank 0 waited in it, rank 1 never started it" in out, out


IGNORES_SIGNALS = """
import signal, time
import shardflow as torch, shardflow.distributed as dist
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a rank that does not stop on Ctrl-C
signal.signal(signal.SIGTERM, signal.SIG_IGN)
dist.init_process_group("gloo")
dist.barrier()
print("STARTED", flush=True)
if dist.get_rank() == 1:
    time.sleep(1000)
dist.all_reduce(torch.ones(2))
"""


@pytest.mark.mpi
def test_ctrl_c_on_a_hung_job_says_where_each_rank_was_stuck(tmp_path):
    # the ranks ignore the forwarded SIGINT, so --grace ends and they are killed; the
    # launcher said only that, and now where each rank was stuck
    script = tmp_path / "prog.py"
    script.write_text(IGNORES_SIGNALS)
    log = tmp_path / "out.txt"
    cmd = [sys.executable, "-u", "-c",
           "import sys; from shardflow.cli.run import main; sys.exit(main(sys.argv[1:]))",
           "-n", "2", "--grace", "1", "--timeout", "60", str(script)]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=rank_env(None),
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 40
        while "STARTED" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # rank 0 is in the all_reduce by now
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
    finally:
        kill_session(proc.pid, grace=0.0)
    text = log.read_text()
    assert rc == 130, text
    assert "they were killed with SIGKILL" in text, text
    assert " in all_reduce(shape=(2,), dtype=float32, op=sum), collective #2 of the world" in text
    assert "collective #2 of the world: rank 0 waited in it, rank 1 never started it" in text


def _slot(seq=0, sig=None, waiting=-1, elsewhere=None, p2p=None):
    row = np.zeros(arrival.HEAD, dtype=np.int64)
    row[0] = row[13] = seq
    if sig is not None:
        row[1:13] = callsig.fields(*sig)
        row[2] = seq
    row[14] = waiting
    if elsewhere is not None:  # (seq, size, world ranks, signature fields)
        eseq, size, ranks, fields = elsewhere
        row[25], row[26:30] = size, list(ranks) + [-1] * (4 - len(ranks))
        row[30:42] = fields
        row[24] = eseq
    if p2p is not None:  # (op, peer, tag, count, dtype)
        op, peer, tag, count, dt = p2p
        row[17:22] = [callsig.OPCODES[op], peer, tag, count, callsig.dtype_code(dt)]
        row[22], row[23] = 1, 1
    return arrival.decode_slot(row, 3)


def test_job_end_lines_group_ranks_and_name_sub_group_and_p2p_waits():
    ar = ("all_reduce", 2, "sum", np.float32, 6, -1, (2, 3))
    sub = callsig.fields("all_gather", 1, None, np.int64, 4, -1, (4,))
    ends = {
        0: board_file.RankEnd(0, 3, _slot(2, ar, waiting=2), 100.0),
        1: board_file.RankEnd(1, 3, _slot(1, ("barrier", 1, None, None, 0, -1, ()),
                                          elsewhere=(1, 2, (1, 2), sub)), 101.0),
        2: board_file.RankEnd(2, 3, _slot(2, ar, waiting=2), 102.0),
    }
    lines = board_file.job_end_lines(ends, failed_rank=None, ended_at=103.0)
    assert lines[1] == ("  ranks [0, 2]: waiting for 3.0 s in all_reduce(shape=(2, 3), "
                        "dtype=float32, op=sum), collective #2 of the world group (3 ranks)")
    assert lines[2] == ("  rank 1: waiting for 2.0 s in all_gather(shape=(4,), dtype=int64), "
                        "collective #1 of the group of ranks [1, 2]")
    assert lines[3] == ("  collective #2 of the world: ranks [0, 2] waited in it, rank 1 never "
                        "started it")
    recv = board_file.RankEnd(1, 3, _slot(0, p2p=("recv", 0, 7, 3, np.float32)), 102.5)
    assert board_file.job_end_lines({1: recv}, failed_rank=None, ended_at=103.0)[1] == (
        "  rank 1: waiting for 0.5 s in recv from rank 0 (tag 7, 3 elements of float32)")
    assert board_file.job_end_lines({}, failed_rank=0) == []


class _NoWindow:  # an MPI without one-sided windows: the board keeps its slot in memory
    class Win:
        @staticmethod
        def Allocate(*args, **kwargs):
            raise RuntimeError("no one-sided support")


class _Comm:
    def Get_rank(self):
        return 1

    def Get_size(self):
        return 2


def test_the_boards_writes_reach_the_mirror_file_the_launcher_reads(tmp_path):
    def mirror(rank, size):
        return board_file.BoardFile(str(tmp_path / f"board-rank{rank}.bin"), size)

    board = arrival.ArrivalBoard(_NoWindow, _Comm(), mirror=mirror)
    board.started(3, bytes(memoryview(np.array(
        callsig.fields("broadcast", 3, None, np.float64, 6, 0, (2, 3)), dtype=np.int64))))
    board.waiting(3)
    end = board_file.read_boards(str(tmp_path))[1]
    assert end.size == 2 and end.since > 0
    assert (end.state.seq, end.state.waiting) == (3, 3)
    assert end.state.sig.describe() == "broadcast(shape=(2, 3), dtype=float64, root=0)"
    board.waiting(-1)  # the wait ended
    board.p2p_started("recv", 0, 0, 5, 4, np.int32)
    board.p2p_waiting(True)
    end = board_file.read_boards(str(tmp_path))[1]
    assert end.state.waiting == -1 and end.state.seq == 3
    assert board_file.job_end_lines({1: end}, None)[1].startswith(
        "  rank 1: waiting for ")
    assert board_file.job_end_lines({1: end}, None)[1].endswith(
        " in recv from rank 0 (tag 5, 4 elements of int32)")
    board.p2p_waiting(False)
    board.waiting_elsewhere(2, 2, [0, 1], callsig.fields("all_reduce", 2, "max", np.float32, 1,
                                                          -1, (1,)))
    end = board_file.read_boards(str(tmp_path))[1]
    assert board_file.job_end_lines({1: end}, None)[1].endswith(
        " in all_reduce(shape=(1,), dtype=float32, op=max), collective #2 of the group of "
        "ranks [0, 1]")
    board.waiting_elsewhere(-1, 2, [0, 1], None)  # that wait ended
    assert board_file.read_boards(str(tmp_path))[1].state.elsewhere == ()
    board.set_phase(arrival.PHASE_EXITING)
    end = board_file.read_boards(str(tmp_path))[1]
    assert board_file.job_end_lines({1: end}, None)[1] == (
        "  rank 1: exiting (its script had ended or called sys.exit())")
