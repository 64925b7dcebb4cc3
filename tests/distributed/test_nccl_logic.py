"""The NCCL communicator's own logic on real MPI ranks, without a GPU: its device side is
``tests.doubles.fake_nccl.FakeCudaAPI`` (NCCL's calls on host memory through MPI), so what is
checked is what the communicator hands to NCCL (pointers, counts, dtypes, roots, grouped
send/recv), its signature checks, its timeout report and its routing of host arrays.
The same communicator on a real GPU is tests/gpu/test_nccl.py.

Each rank rebuilds every rank's input from its seed, so the expected values are an
independent NumPy computation.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.distributed.programs."


@pytest.mark.parametrize("n,has_avg", [(2, True), (3, False)])
def test_collectives_through_nccl_calls_match_numpy(n, has_avg):
    run_program(PROGRAMS + "nccl_collectives_through_fake_calls", n=n, timeout=90,
                args=["1" if has_avg else "0"]).check()


def test_mismatched_calls_raise_on_every_rank_before_nccl_runs():
    res = run_program(PROGRAMS + "nccl_mismatch_before_nccl_runs", n=2, timeout=60).check()
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("MISMATCH")]
    assert len(lines) == 2, res.output
    for ln in lines:
        assert "rank 0: all_reduce(shape=(4,), dtype=float32, op=sum)" in ln, ln
        assert "rank 1: broadcast(shape=(4,), dtype=float32, root=0)" in ln, ln
        assert "NCCL was not called" in ln


def test_a_collective_that_never_completes_ends_the_job_naming_rank_and_op():
    res = run_program(PROGRAMS + "nccl_collective_never_completes", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "2"})
    assert res.returncode != 0, res.output
    assert not res.timed_out, "the job hung instead of ending within the collective timeout"
    assert "all_reduce (NCCL collective #3) on rank 1" in res.stderr, res.output
    assert "did not complete within 2 s" in res.stderr
    assert "UNREACHABLE on rank 1" not in res.stdout
    assert "NCCL communicator was aborted" in res.stderr


def test_unsupported_dtype_and_mismatched_recv_explain_the_fix():
    res = run_program(PROGRAMS + "nccl_bad_dtype_and_recv", n=2, timeout=60,
                      env={"SHARDFLOW_COMM_TIMEOUT": "3"})
    assert res.stdout.count("TYPE NCCL has no type for dtype complex64") == 2, res.output
    assert "P2P recv from rank 0 (tag 0) on rank 1: the peer sent shape (3,) dtype float32" in res.stdout, res.output
