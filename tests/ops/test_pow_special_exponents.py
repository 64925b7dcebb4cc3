"""``x.pow(3)``, ``x.pow(-2)`` and ``x.pow(-0.5)`` as torch 2.13's CPU pow kernel computes
them: as products and quotients, each op rounded (``x * x * x``, ``1 / (x * x)``,
``1 / sqrt(x)``; bfloat16 through its vectorised ops, which round each step too). NumPy's
``power`` is nearer the exact value and was an ulp off torch in a third of float32 ``x ** 3``
(GPT-2's hand-written tanh-GELU, ``0.044715 * torch.pow(x, 3.0)``) and a fifth of bfloat16
``x ** 3``. Other exponents use torch's vectorised ``pow`` (Sleef), which shardflow does not
reproduce bit for bit (docs/COMPAT.md, "Session 40 (compat-llm)")."""

import math

import numpy as np
import pytest
import torch

import shardflow


def _pair(dtype, positive):
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32) * 0.5
    if positive:
        x = np.abs(x) + 0.1
    return torch.tensor(x).to(getattr(torch, dtype)), shardflow.tensor(x).to(getattr(shardflow, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("e", [3, 3.0, -2, -0.5])
def test_pow_special_exponents_bit_equal_to_torch(e, dtype):
    t, s = _pair(dtype, positive=e < 0)
    for th, sf in ((t.pow(e), s.pow(e)), (t ** e, s ** e), (torch.pow(t, e), shardflow.pow(s, e))):
        assert str(sf.dtype).split(".")[-1] == str(th.dtype).split(".")[-1]
        np.testing.assert_array_equal(sf.double().numpy(), th.double().numpy())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cube_gradient_and_tanh_gelu_like_torch(dtype):
    t, s = _pair(dtype, positive=False)
    t.requires_grad_()
    s.requires_grad_()
    g = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    t.pow(3).backward(torch.tensor(g).to(t.dtype))
    s.pow(3).backward(shardflow.tensor(g).to(s.dtype))
    np.testing.assert_array_equal(s.grad.double().numpy(), t.grad.double().numpy())

    def new_gelu(lib, x):  # minGPT's NewGELU
        return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * lib.pow(x, 3.0))))

    inner = [(x + 0.044715 * lib.pow(x, 3.0)).detach().double().numpy() for lib, x in ((torch, t), (shardflow, s))]
    np.testing.assert_array_equal(inner[1], inner[0])
    np.testing.assert_allclose(new_gelu(shardflow, s).detach().double().numpy(),
                               new_gelu(torch, t).detach().double().numpy(), rtol=1e-2 if dtype == "bfloat16" else 1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_rsqrt_and_its_gradient_bit_equal_to_torch(dtype):
    """``rsqrt``: float16/bfloat16 computed in float32 and rounded once (the 2-byte sqrt
    rounded first was an ulp off in 37% of bfloat16 outputs); the gradient in torch's order,
    ``-0.5 * grad * result.pow(3)``."""
    t, s = _pair(dtype, positive=True)
    t.requires_grad_()
    s.requires_grad_()
    g = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    yt, ys = torch.rsqrt(t), shardflow.rsqrt(s)
    np.testing.assert_array_equal(ys.detach().double().numpy(), yt.detach().double().numpy())
    yt.backward(torch.tensor(g).to(t.dtype))
    ys.backward(shardflow.tensor(g).to(s.dtype))
    np.testing.assert_array_equal(s.grad.double().numpy(), t.grad.double().numpy())
