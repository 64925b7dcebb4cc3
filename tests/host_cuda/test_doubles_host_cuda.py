"""The doubles themselves (tests/doubles): where they model CuPy, they must do what CuPy does,
else a host_cuda test can pass on behaviour a GPU does not have; and installing them goes
through shardflow's injection points only, restored afterwards."""

import numpy as np
import pytest

from shardflow.backend import xp
from shardflow.comm import nccl_lib
from shardflow.comm.local import LocalCommunicator
from shardflow.comm.nccl import NCCLCommunicator

from ..doubles import host_cupy
from ..doubles.fake_nccl import HostCudaAPI
from ..doubles.host_cuda import installed


def test_asarray_of_a_host_array_copies_it_as_cupy_does():
    h = np.arange(6, dtype=np.float32)
    for make in (host_cupy.asarray, host_cupy.array):
        d = make(h)
        h2 = h.copy()
        h[...] = -1  # the device array is a copy: writing the host array leaves it alone
        np.testing.assert_array_equal(d.get(), h2)
        d[...] = 5  # and the other way round
        np.testing.assert_array_equal(h, -1)
        h[...] = h2
    d = host_cupy.asarray(h)
    assert host_cupy.asarray(d) is d  # a device array is returned as it is


def test_cuda_has_no_nccl_attribute_the_api_carries_nccl():
    with pytest.raises(AttributeError):
        host_cupy.cuda.nccl  # noqa: B018


def test_installed_uses_the_injection_points_and_restores_them(host_cuda):
    # inside tests/host_cuda the fixture (host_cuda: its API) has installed them already
    assert xp.cupy() is host_cupy and nccl_lib.cuda_api() is host_cuda
    with installed() as api:
        assert isinstance(api, HostCudaAPI) and nccl_lib.cuda_api() is api
        w = NCCLCommunicator(LocalCommunicator())  # the communicator takes the injected API
        before = api.calls
        a = host_cupy.asarray(np.ones(3, np.float32))
        w.all_reduce(a, "sum")
        assert api.calls == before + 1
        w.free()
    assert nccl_lib.cuda_api() is host_cuda and xp.cupy() is host_cupy
