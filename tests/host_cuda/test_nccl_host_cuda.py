"""The GPU's NCCL tests (tests/gpu/test_nccl.py) run on CuPy's host stand-in: the test code a
GPU session will run first is itself exercised here (one rank in-process over a world of one;
two ranks sharing the stand-in's one device, which real NCCL may refuse)."""

import pytest

from shardflow.testing.mpi import run_mpi

from ..gpu import test_nccl as gpu_nccl

INSTALL = """
from shardflow.backend import xp as _xp
from shardflow.testing import host_cupy as _host_cupy
_xp.set_cuda_array_module(_host_cupy)
"""


def test_the_gpu_one_rank_nccl_test_on_host_cuda():
    gpu_nccl.test_every_collective_with_one_rank_on_cupy_arrays()


@pytest.mark.mpi
def test_the_gpu_two_rank_nccl_script_on_host_cuda():
    res = run_mpi(INSTALL + gpu_nccl.TWO_RANKS, n=2, timeout=120).check()
    assert res.stdout.count("OK") == 2, res.output
