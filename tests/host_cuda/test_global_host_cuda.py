"""Global tensors on a ``placement("cuda")`` in real ranks, without a GPU: CuPy's host
stand-in on every rank, the fake NCCL (NCCL's calls over MPI) under the NCCL
communicator (``tests.doubles.host_cuda.install()``). Every boxing between broadcast, partial-sum and the splits, with gradients, and a
tensor-parallel MLP, against the local computation.

The 2-rank programs but the functional collectives (whose check of unseeded initializations
wants a fresh process) share one launch (programs/several.py); each test checks its own."""

import pytest

from shardflow.testing.mpi import run_program

from ._shared_launch import passed, run_several

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.host_cuda.programs."


TWO_RANK = ["global_boxing_and_tp_mlp_on_cuda", "global_ops_on_cuda", "gpt_tensor_parallel_on_cuda"]


@pytest.fixture(scope="module")
def two_rank_job():
    return run_several(TWO_RANK, timeout=300)


def test_global_tensors_on_a_cuda_placement_over_nccl(two_rank_job):
    output = passed(two_rank_job, "global_boxing_and_tp_mlp_on_cuda")
    assert "rank 0: ok" in output and "rank 1: ok" in output


def test_global_ops_on_a_cuda_placement_match_one_cpu_process(two_rank_job):
    passed(two_rank_job, "global_ops_on_cuda")


@pytest.mark.parametrize("n", [2, 3])
def test_functional_collectives_and_whole_tensors_on_cuda(n):
    run_program(PROGRAMS + "functional_collectives_on_cuda", n=n, timeout=180).check()


def test_gpt_tensor_parallel_on_cuda_tracks_one_cpu_process(two_rank_job):
    passed(two_rank_job, "gpt_tensor_parallel_on_cuda")


def test_the_two_rank_job_ended_cleanly(two_rank_job):
    two_rank_job.check()
