"""``sinc`` and ``logcumsumexp`` of complex tensors, forward and backward, as torch 2.13
(shardflow refused both, saying they had no complex form), and against float64 finite
differences of the real loss through the real and imaginary parts."""

import numpy as np
import pytest
import torch

import shardflow as sf

V = np.array([[1 + 1j, 0.5 - 2j, -1 + 0.3j], [2 - 1j, 0.1j, -2.5 + 0j]])  # (no zero of sinc: |.| has a kink there)


def _run(lib, op, v, dim):
    z = lib.tensor(v, dtype=lib.complex128, requires_grad=True)
    y = lib.sinc(z) if op == "sinc" else lib.logcumsumexp(z, dim)
    y.abs().sum().backward()
    return y.detach().resolve_conj().numpy(), z.grad.resolve_conj().numpy()


@pytest.mark.parametrize("op,dim", [("sinc", None), ("logcumsumexp", 0), ("logcumsumexp", 1)])
def test_like_torch_and_finite_differences(op, dim):
    y_sf, g_sf = _run(sf, op, V, dim)
    y_th, g_th = _run(torch, op, V, dim)
    np.testing.assert_allclose(y_sf, y_th, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_sf, g_th, rtol=1e-10, atol=1e-12)

    def loss(v):
        return float(_run(sf, op, v, dim)[0].__abs__().sum())

    # torch's complex gradient of a real loss is dL/dRe + i dL/dIm
    h, fd = 1e-6, np.zeros_like(V)
    for idx in np.ndindex(V.shape):
        for unit in (1, 1j):
            e = np.zeros_like(V)
            e[idx] = unit * h
            fd[idx] += unit * (loss(V + e) - loss(V - e)) / (2 * h)
    np.testing.assert_allclose(g_sf, fd, rtol=1e-5, atol=1e-6)


def test_complex64_keeps_its_dtype_and_sinc_of_zero_is_one():
    assert sf.tensor([1 + 1j], dtype=sf.complex64).logcumsumexp(0).dtype == sf.complex64
    assert sf.sinc(sf.tensor([0j])).tolist() == [1 + 0j]
