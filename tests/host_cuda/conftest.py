"""``device="cuda"`` on the CPU: CuPy's stand-in (tests/doubles/host_cupy.py) is installed as
the CUDA array module, and the fake NCCL as the NCCL communicators' API, for each test here
and removed after it (tests/doubles/host_cuda.py)."""

import pytest

from ..doubles import host_cuda as _host_cuda


@pytest.fixture(autouse=True)
def host_cuda():
    with _host_cuda.installed() as api:
        yield api
