"""The GPU's NCCL tests (tests/gpu/test_nccl.py) on CuPy's host stand-in and the fake NCCL:
the test code a GPU session runs first is itself exercised here, on one rank in-process and
on 2 and 3 ranks whose inputs differ (the fake never refuses ranks that share its one
device, so every rank must give NumPy's results)."""

import pytest

from shardflow.testing.mpi import run_program

from ..gpu import test_nccl as gpu_nccl


def test_the_gpu_one_rank_nccl_test_on_host_cuda():
    gpu_nccl.test_every_collective_with_one_rank_on_cupy_arrays()


@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 3])
def test_the_gpu_multi_rank_nccl_script_on_host_cuda(n):
    res = run_program(gpu_nccl.RANKS, n=n, timeout=120, args=["host_cuda"])
    assert gpu_nccl.refusal(res, n) is None, res.output
