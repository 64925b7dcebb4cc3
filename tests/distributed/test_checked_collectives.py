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


@pytest.mark.parametrize("n", [2, 3])
def test_mismatched_calls_raise_on_every_rank_and_change_nothing(n):
    run_program(PROGRAMS + "mismatched_collectives_raise_everywhere", n=n, timeout=90,
                args=[LARGE]).check()


def test_shapes_with_equal_counts_are_compared_in_debug_mode_only():
    res = run_program(PROGRAMS + "shapes_with_equal_counts", n=2, timeout=60).check()
    assert res.stdout.count("PASSED") == 2, res.output  # what MPI needs agrees
    res = run_program(PROGRAMS + "shapes_with_equal_counts", n=2, timeout=60,
                      env={"SHARDFLOW_DEBUG": "collectives"}).check()
    assert res.stdout.count("RAISED") == 2, res.output


def test_broadcast_into_larger_tensor_reports_both_shapes():
    res = run_program(PROGRAMS + "broadcast_into_larger_tensor", n=2, timeout=60)
    assert not res.timed_out and "NO ERROR" not in res.stdout, res.output
    errors = [line for line in res.stdout.splitlines() if line.startswith("ERR")]
    assert len(errors) == 2, res.output
    # the signature exchange has one block size per world, so nothing is truncated: both
    # ranks report the mismatch from the real signatures
    assert not any("MPI_ERR_TRUNCATE" in e for e in errors), res.output
    for e in errors:
        assert "broadcast(shape=(4,), dtype=float32, root=0)" in e, e
        assert "broadcast(shape=(6,), dtype=float32, root=0)" in e, e


def test_recv_of_other_size_or_dtype_reports_both_shapes():
    run_program(PROGRAMS + "recv_of_other_size_or_dtype", n=2, timeout=60).check()
