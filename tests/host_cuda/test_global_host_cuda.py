"""Global tensors on a ``placement("cuda")`` in real ranks, without a GPU: CuPy's host
stand-in on every rank, the fake NCCL (NCCL's calls over MPI) under the NCCL
communicator (``tests.doubles.host_cuda.install()``). Every boxing between broadcast, partial-sum and the splits, with gradients, and a
tensor-parallel MLP, against the local computation."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.host_cuda.programs."


def test_global_tensors_on_a_cuda_placement_over_nccl():
    res = run_program(PROGRAMS + "global_boxing_and_tp_mlp_on_cuda", n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output


def test_global_ops_on_a_cuda_placement_match_one_cpu_process():
    run_program(PROGRAMS + "global_ops_on_cuda", n=2, timeout=240).check()


@pytest.mark.parametrize("n", [2, 3])
def test_functional_collectives_and_whole_tensors_on_cuda(n):
    run_program(PROGRAMS + "functional_collectives_on_cuda", n=n, timeout=180).check()


def test_gpt_tensor_parallel_on_cuda_tracks_one_cpu_process():
    run_program(PROGRAMS + "gpt_tensor_parallel_on_cuda", n=2, timeout=240).check()
