"""What a GPU run showed wrong, silently, that the host stand-in had not (session 30, an H200):
in-place ops on device views left the base unchanged, CuPy's factorisations and solves reported
no failure (``cholesky`` of a matrix that is not positive-definite, ``inv``/``solve`` of a
singular one), and ``index_add`` of complex values had no CuPy kernel (``istft``)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd.test_inplace_on_views import PROGRAMS
from tests.host_cuda.test_inplace_views_host_cuda import (
    test_inplace_on_a_view_on_cuda_equals_the_cpu,
)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_on_a_device_view_changes_its_base(name):
    test_inplace_on_a_view_on_cuda_equals_the_cpu(name)


NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


@pytest.mark.parametrize("call", [
    lambda L, d: L.linalg.cholesky(L.tensor(NOT_PD, device=d)),
    lambda L, d: L.cholesky(L.tensor(NOT_PD, device=d)),
    lambda L, d: L.linalg.inv(L.tensor(SINGULAR, device=d)),
    lambda L, d: L.inverse(L.tensor(SINGULAR, device=d)),
    lambda L, d: L.linalg.solve(L.tensor(SINGULAR, device=d), L.ones(2, device=d)),
], ids=["linalg.cholesky", "cholesky", "linalg.inv", "inverse", "linalg.solve"])
def test_a_failed_factorisation_raises_on_cuda_as_torch(call):
    for lib in (torch, sf):
        with pytest.raises(RuntimeError):  # torch.linalg.LinAlgError is a RuntimeError
            out = call(lib, "cuda")
            print(lib.__name__, out)  # (reached only when nothing was raised)


def test_cholesky_ex_info_on_cuda_as_torch():
    a = np.stack([np.eye(3) * 2, np.diag([1.0, -1.0, 1.0])])
    for lib in (torch, sf):
        info = lib.linalg.cholesky_ex(lib.tensor(a, device="cuda")).info
        assert info.cpu().tolist() == [0, 2], lib.__name__


def test_index_add_of_complex_values_on_cuda():
    src = np.arange(6, dtype=np.complex64).reshape(3, 2) * (1 + 2j)
    idx = np.array([0, 2, 0])
    want = np.zeros((3, 2), np.complex64)
    np.add.at(want, idx, src)
    got = sf.zeros(3, 2, dtype=sf.complex64, device="cuda").index_add(
        0, sf.tensor(idx, device="cuda"), sf.tensor(src, device="cuda"))
    np.testing.assert_allclose(got.cpu().numpy(), want)
