"""ZeRO-1 (``ZeroRedundancyOptimizer``), FSDP (``fully_shard``, ZeRO-2 and ZeRO-3),
``parallelize`` and the tf.distribute-style strategies with parameters on ``device="cuda"``
in real ranks, without a GPU: every rank installs CuPy's host stand-in and the
fake NCCL, which carries NCCL's calls over MPI on the host memory behind the pointers, and
``init_process_group("nccl")`` builds the NCCL communicator. Each is checked against the same
training in one CPU process (every rank rebuilds the whole global batch from the step's
seed and computes that reference itself), and the NCCL call counter proves the device
buffers (all-gathers, reduce-scatters, all-reduces) went through NCCL.

HSDP (``fully_shard`` on a 2-D ``("dp_replicate", "dp_shard")`` cuda mesh) runs on 4 ranks:
its shard and replicate dimensions are sub-group NCCL communicators.

The three 2-rank programs share one launch (programs/several.py: each builds its own NCCL
process group, destroyed after it); each test checks that its program passed on both ranks.
"""

import pytest

from shardflow.testing.mpi import run_program

from ._shared_launch import passed, run_several

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.host_cuda.programs."


TWO_RANK = ["zero1_over_nccl", "fsdp_stages_over_nccl", "strategies_and_parallelize_over_nccl"]


@pytest.fixture(scope="module")
def two_rank_job():
    return run_several(TWO_RANK)


def test_zero1_on_cuda_over_nccl_equals_one_cpu_process(two_rank_job):
    passed(two_rank_job, "zero1_over_nccl")


def test_fsdp_stages_2_and_3_on_cuda_over_nccl_equal_one_cpu_process(two_rank_job):
    output = passed(two_rank_job, "fsdp_stages_over_nccl")
    for stage in (2, 3):
        assert f"rank 0: stage {stage} ok" in output and f"rank 1: stage {stage} ok" in output


def test_strategies_and_parallelize_on_cuda_over_nccl_equal_one_cpu_process(two_rank_job):
    passed(two_rank_job, "strategies_and_parallelize_over_nccl")


def test_the_two_rank_job_ended_cleanly(two_rank_job):
    two_rank_job.check()


def test_hsdp_on_a_2d_cuda_mesh_over_nccl_equals_one_cpu_process():
    run_program(PROGRAMS + "hsdp_2d_mesh_over_nccl", n=4, timeout=180).check()
