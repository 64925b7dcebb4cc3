"""``device="cuda"`` and backend ``"nccl"`` on host memory: CuPy's stand-in (``host_cupy``)
as the CUDA array module and :class:`~tests.doubles.fake_nccl.HostCudaAPI` as every NCCL
communicator's CUDA/NCCL API, through shardflow's two injection points.

``install()`` is for a rank script (the process ends with it); ``installed()`` restores the
previous array module and API afterwards (the ``host_cuda`` fixture of tests/host_cuda).
Both give the API, whose ``calls`` counts the NCCL calls.
"""

from __future__ import annotations

from contextlib import contextmanager

from shardflow.backend import xp
from shardflow.comm import nccl_lib

from . import host_cupy
from .fake_nccl import HostCudaAPI


def install() -> HostCudaAPI:
    """Make host_cupy the CUDA array module and a new HostCudaAPI the NCCL communicators' API."""
    xp.set_cuda_array_module(host_cupy)
    api = HostCudaAPI()
    nccl_lib.set_cuda_api(api)
    return api


@contextmanager
def installed():
    """:func:`install` for the block, then the previous array module and API again."""
    previous_module = xp.set_cuda_array_module(host_cupy)
    try:
        api = HostCudaAPI()
        previous_api = nccl_lib.set_cuda_api(api)
        try:
            yield api
        finally:
            nccl_lib.set_cuda_api(previous_api)
    finally:
        xp.set_cuda_array_module(previous_module)
