"""Unary math on complex tensors against PyTorch (found by tests/ops/fuzz): exp, log, sqrt,
sin, tanh, sigmoid, ... cast a complex input to float32 and dropped its imaginary part
(a silent wrong value); their gradients follow PyTorch's convention g * conj(f'(z)). Ops
without a complex form (erf, gelu, softplus, ...) raise NotImplementedError as torch does."""

import numpy as np
import pytest
import torch

import shardflow as sf

Z = np.array([0.3 + 0.4j, -1 + 2j, 2 - 1j, -0.5 - 0.25j], np.complex64)
W = np.array([1 + 2j, 0.5 - 1j, -1 + 0.3j, 0.25 + 0.5j], np.complex64)
HOLOMORPHIC = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
               "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "sigmoid"]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_complex_unary_value_and_grad_match_torch(name, dtype):
    out, grads = {}, {}
    for L in (torch, sf):
        x = L.tensor(Z.astype(dtype), requires_grad=True)
        y = getattr(L, name)(x)
        (y * L.tensor(W.astype(dtype))).real.sum().backward()
        out[L], grads[L] = y, x.grad
    assert str(out[sf].dtype).split(".")[-1] == str(out[torch].dtype).split(".")[-1]
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(out[sf].detach().numpy(), out[torch].detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(grads[sf].numpy(), grads[torch].numpy(), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("name", ["exp", "sqrt", "tanh", "sigmoid"])
def test_complex_unary_inplace_matches_torch(name):
    t, s = torch.tensor(Z), sf.tensor(Z)
    getattr(t, name + "_")()
    getattr(s, name + "_")()
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_complex_silu_forward_matches_torch():
    np.testing.assert_allclose(sf.nn.functional.silu(sf.tensor(Z)).numpy(),
                               torch.nn.functional.silu(torch.tensor(Z)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [lambda L, x: L.erf(x), lambda L, x: L.nn.functional.gelu(x),
                               lambda L, x: L.nn.functional.softplus(x), lambda L, x: L.nn.functional.elu(x)])
def test_complex_input_without_complex_form_raises_like_torch(f):
    with pytest.raises(NotImplementedError):
        f(torch, torch.tensor(Z))
    with pytest.raises(NotImplementedError, match="ComplexFloat"):
        f(sf, sf.tensor(Z))
