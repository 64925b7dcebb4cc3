"""``device="cuda"`` on the CPU: CuPy's stand-in (shardflow.testing.host_cupy) is installed as
the CUDA array module for each test here and removed after it."""

import pytest

from shardflow.backend import xp
from shardflow.testing import host_cupy


@pytest.fixture(autouse=True)
def host_cuda():
    previous = xp.set_cuda_array_module(host_cupy)
    try:
        yield host_cupy
    finally:
        xp.set_cuda_array_module(previous)
