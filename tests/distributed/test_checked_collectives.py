"""Collectives cannot be silently wrong: mismatched calls raise on every rank, arrays intact.

Without any debug flag, ranks that disagree on dtype, element count, root, reduce op or
the collective itself get a CommError naming each rank's call (small messages, whose data
rides in the signature exchange, and large ones, whose signatures go first), and no array
is changed, so the job can even catch it and go on. When the small exchange's blocks differ
in size (a small broadcast into a larger tensor), the smaller side gets MPI_ERR_TRUNCATE,
reported with both shapes, and the larger side the mismatch. Point-to-point: a recv into a buffer smaller, larger or of another dtype than what
was sent raises with both shapes.
"""

import pytest

from shardflow.comm import mpi as _mpi_backend
from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi

LARGE = 20_000  # float32 elements: signatures first, then MPI's own collective on the data
assert 4 * LARGE > _mpi_backend.EAGER_SAFE_BYTES

PROGRAMS = "tests.distributed.programs."


# The two-rank programs that need no debug flag run in one job, one after the other (each
# ends with the ranks in step); every test below reads its own case's lines from it.
TWO_RANK_CASES = [f"mismatched_collectives_raise_everywhere:{LARGE}", "shapes_with_equal_counts",
                  "broadcast_into_larger_tensor", "recv_of_other_size_or_dtype"]


@pytest.fixture(scope="module")
def two_rank_job():
    return run_program(PROGRAMS + "programs_in_one_job", n=2, timeout=120,
                       args=TWO_RANK_CASES)


def _case_ok(res, name, n=2):
    """The case ``name`` of the combined job returned on all ``n`` ranks."""
    __tracebackhide__ = True
    assert not res.timed_out, f"case {name}: the job timed out\n{res.output}"
    head = f"CASE {name} OK "
    done = {line[len(head):] for line in res.stdout.splitlines() if line.startswith(head)}
    assert done == {str(k) for k in range(n)}, f"case {name} did not return on every rank\n{res.output}"


def test_mismatched_calls_raise_on_every_rank_and_change_nothing_on_2_ranks(two_rank_job):
    _case_ok(two_rank_job, "mismatched_collectives_raise_everywhere")


def test_mismatched_calls_raise_on_every_rank_and_change_nothing_on_3_ranks():
    # 3 ranks: a majority exists and the odd call is marked (a distinct report)
    run_program(PROGRAMS + "mismatched_collectives_raise_everywhere", n=3, timeout=90,
                args=[LARGE]).check()


def test_shapes_with_equal_counts_are_compared_in_debug_mode_only(two_rank_job):
    _case_ok(two_rank_job, "shapes_with_equal_counts")
    assert two_rank_job.stdout.count("PASSED") == 2, two_rank_job.output  # what MPI needs agrees
    res = run_program(PROGRAMS + "shapes_with_equal_counts", n=2, timeout=60,
                      env={"SHARDFLOW_DEBUG": "collectives"}).check()
    assert res.stdout.count("RAISED") == 2, res.output


def test_broadcast_into_larger_tensor_reports_both_shapes(two_rank_job):
    res = two_rank_job
    _case_ok(res, "broadcast_into_larger_tensor")
    assert "NO ERROR" not in res.stdout, res.output
    errors = [line for line in res.stdout.splitlines() if line.startswith("ERR")]
    assert len(errors) == 2, res.output
    # the signature exchange has one block size per world, so nothing is truncated: both
    # ranks report the mismatch from the real signatures
    assert not any("MPI_ERR_TRUNCATE" in e for e in errors), res.output
    for e in errors:
        assert "broadcast(shape=(4,), dtype=float32, root=0)" in e, e
        assert "broadcast(shape=(6,), dtype=float32, root=0)" in e, e


def test_recv_of_other_size_or_dtype_reports_both_shapes(two_rank_job):
    _case_ok(two_rank_job, "recv_of_other_size_or_dtype")


def test_combined_job_ends_cleanly(two_rank_job):
    two_rank_job.check()  # exit code 0 and main() returned on both ranks
