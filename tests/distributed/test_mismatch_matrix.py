"""The collective mismatch matrix, many times over (issue 25, gap 4): on 2, 3 and 4 ranks,
with the odd call on the first, a middle or the last rank, a count mismatch on the small
path, on the large path and across them, a dtype mismatch on both, blocking and async:
every rank raises, every rank's report names every rank's own call of that collective
(never a peer's next one), the reports are the same on every rank, no array changes, no
Open MPI error text is printed, and the job stays in step (a correct collective follows).

Before, the exchange's blocks were sized by the call: the smaller side's receive was
truncated (MPI_ERR_TRUNCATE), Open MPI printed "MPI Error in NBC subrequest" lines, and on
3 ranks the report sometimes named a peer's next collective (read from the arrival board
after the peer had moved on) or the job fell out of step."""

import pytest

from shardflow.comm import mpi as _mpi_backend
from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

LARGE = 2000  # float32 elements: 8 KB, beyond the small path on every world size
assert 4 * LARGE > _mpi_backend.EAGER_SAFE_BYTES

PROGRAM = r"""
import hashlib, sys
import numpy as np
from shardflow import comm
from shardflow.comm import CommError
LARGE, REPEATS = int(sys.argv[1]), int(sys.argv[2])
w = comm.init()
r, n = w.rank, w.size
odd_ranks = sorted({0, n // 2, n - 1})

CASES = [  # name, (count, dtype) on the other ranks, (count, dtype) on the odd one
    ("count small", (4, "float32"), (5, "float32")),
    ("count large", (LARGE, "float32"), (LARGE + 2, "float32")),
    ("small vs large", (4, "float32"), (LARGE, "float32")),
    ("large vs small", (LARGE, "float32"), (4, "float32")),
    ("dtype small", (6, "float32"), (6, "int32")),
    ("dtype large", (LARGE, "float32"), (LARGE, "int32")),
]
digest = hashlib.sha256()
checked = 0
for rep in range(REPEATS):
    for odd in odd_ranks:
        for name, usual, other in CASES:
            for async_op in (False, True):
                k, dt = other if r == odd else usual
                a = (np.arange(k) % 5 + r).astype(dt)
                before = a.copy()
                seq = w.seq + 1
                try:
                    work = w.all_reduce(a, async_op=async_op)
                    if async_op:
                        work.wait()
                except CommError as e:
                    msg = str(e)
                else:
                    raise AssertionError(f"{name} (odd rank {odd}): no CommError on rank {r}")
                assert f"collective mismatch at collective #{seq} " in msg, (name, msg)
                for q in range(n):
                    kq, dq = other if q == odd else usual
                    line = f"rank {q}: all_reduce(shape=({kq},), dtype={dq}, op=sum) as collective #{seq}"
                    assert line in msg, (name, odd, line, msg)
                if n > 2:
                    assert msg.count("<- differs") == 1 and f"rank {odd}: " in msg.split("<- differs")[0].splitlines()[-1], msg
                assert "MPI_ERR_TRUNCATE" not in msg, msg
                assert a.dtype == before.dtype and np.array_equal(a, before), (name, "array changed")
                digest.update(msg.replace(f"(this is rank {r})", "").encode())
                checked += 1
                # still in step: a correct collective gives the right sum
                s = np.full(3, float(r))
                w.all_reduce(s)
                assert s.tolist() == [float(sum(range(n)))] * 3, (name, s)
mine = digest.hexdigest()
everyone = w.all_gather_object(mine)
assert len(set(everyone)) == 1, ("the ranks' reports differ", everyone)
print(f"MATRIX OK rank {r}: {checked} mismatches", flush=True)
"""


@pytest.mark.parametrize("n", [2, 3, 4])
def test_mismatch_matrix_reports_every_rank_own_call_every_time(n):
    repeats = 8
    res = run_mpi(PROGRAM, n=n, timeout=240, args=[LARGE, repeats])
    assert not res.timed_out and res.returncode == 0, res.output
    odd = len({0, n // 2, n - 1})
    want = f"{repeats * odd * 6 * 2} mismatches"
    assert res.stdout.count("MATRIX OK") == n and want in res.stdout, res.output
    for raw in ("MPI Error in NBC", "NBC_Progress", "MPI_ERR_TRUNCATE"):
        assert raw not in res.output, res.output
