"""Random fills of complex tensors draw torch's numbers: torch fills the real and imaginary
parts through ``view_as_real`` (interleaved), ``normal_`` / ``randn`` with ``std / sqrt(2)``
per part. shardflow wrote the draws into the real parts only and left every imaginary part 0
(found by zongyi-li/fourier_neural_operator's ``torch.rand(..., dtype=torch.cfloat)`` spectral
weights, ``tests/parity/test_public_programs_more_ai.py``)."""

import numpy as np
import pytest
import torch

import shardflow


def _draws(lib, dtype_name, kind):
    lib.manual_seed(0)
    dtype = getattr(lib, dtype_name)
    if kind == "rand":
        a = lib.rand(5, 7, dtype=dtype)
    elif kind == "randn":
        a = lib.randn(40, dtype=dtype)  # past the 16-value vectorised threshold
    elif kind == "uniform_":
        a = lib.empty(3, 4, dtype=dtype).uniform_(-2.0, 3.0)
    elif kind == "normal_":
        a = lib.empty(9, dtype=dtype).normal_(1.0, 2.0)
    else:
        a = lib.randn_like(lib.zeros(6, dtype=dtype)) + lib.rand_like(lib.zeros(6, dtype=dtype))
    after = lib.rand(3)  # the stream continues where torch's does
    return a.numpy(), after.numpy()


@pytest.mark.parametrize("dtype_name", ["cfloat", "cdouble"])
@pytest.mark.parametrize("kind", ["rand", "randn", "uniform_", "normal_", "like"])
def test_complex_random_fills_like_torch(dtype_name, kind):
    (t, t_after), (s, s_after) = _draws(torch, dtype_name, kind), _draws(shardflow, dtype_name, kind)
    assert s.dtype == t.dtype and s.shape == t.shape
    assert np.abs(t.imag).max() > 0
    if kind == "normal_" and dtype_name == "cdouble":  # float64 normal_(mean, std): one rounding of
        np.testing.assert_allclose(s, t, rtol=0, atol=4e-16)  # mean + std * z differs, complex or not
    else:
        np.testing.assert_array_equal(s, t)
    np.testing.assert_array_equal(s_after, t_after)
