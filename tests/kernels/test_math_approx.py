"""The vectorisable float32 math of ``shardflow/kernels/_math.py`` (run here as plain Python,
the same source numba compiles) against float64 references over their whole ranges."""

import math

import numpy as np

from shardflow.kernels._math import erf32, exp_le0, exp_neg, tanh32


def test_tanh32_and_erf32_within_a_few_float32_ulp():
    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, 1e-30, -1e-8, 50.0, -50.0]])
    assert max(abs(tanh32(v) - math.tanh(v)) for v in x) < 4e-7
    assert max(abs(erf32(v) - math.erf(v)) for v in x) < 4e-7
    assert abs(tanh32(50.0) - 1.0) < 4e-7 and abs(erf32(-50.0) + 1.0) < 4e-7  # 1.0 in float32


def test_exp_neg_half_an_ulp_and_its_edges():
    y = -np.concatenate([np.linspace(0, 87, 3001), np.geomspace(1e-12, 1, 200)])
    rel = [abs(exp_neg(v) - math.exp(v)) / math.exp(v) for v in y]
    assert max(rel) < 1.2e-7  # float32's ulp is 1.19e-7 relative
    assert exp_neg(0.0) == 1.0
    assert exp_neg(-105.0) == 0.0 and exp_neg(-math.inf) == 0.0
    assert math.isnan(exp_neg(math.nan))
    assert exp_le0(-3.0, True) == math.exp(-3.0)


def test_tanh32_is_exactly_one_beyond_its_clamp_and_keeps_nan():
    assert all(tanh32(v) == 1.0 and tanh32(-v) == -1.0 for v in (7.91, 8.0, 50.0, 1e6, math.inf))
    assert math.isnan(tanh32(math.nan))


def test_tanh_gelu_kernel_gradient_at_large_inputs():
    """Eager tanh-GELU (the float32 kernel) against PyTorch in float64: the derivative for
    large |x| (its ``x (1 - t^2)`` term grew like x^3 from tanh32's residue: 28.9 at x = 1000)."""
    import torch

    import shardflow as sf

    x = np.array([-1000, -100, -20, -10, -5, -1, 0, 1, 5, 10, 20, 100, 1000, 3e4], np.float32)
    t = sf.tensor(x, requires_grad=True)
    sf.nn.functional.gelu(t, approximate="tanh").sum().backward()
    assert t.grad_fn is None and sf.nn.functional.gelu(t, approximate="tanh").grad_fn.fused
    r = torch.tensor(x.astype(np.float64), requires_grad=True)
    torch.nn.functional.gelu(r, approximate="tanh").sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=0, atol=2e-6)
