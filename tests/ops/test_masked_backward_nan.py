"""Backwards that drop the gradient where a mask is off (clamp, clamp with tensor bounds,
hardtanh, relu) give 0 there even when the incoming gradient is inf or NaN, as PyTorch's
``where``-based formulas do (``g * 0`` gave NaN: a silent NaN in the parameters' gradients
when the clamped branch is infinite, e.g. ``1 / (x.clamp(min=1) - 1)`` at ``x <= 1``)."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.array([0.5, 1.0, 2.0, 3.0, -4.0], np.float32)


def _grad(lib, fn):
    x = lib.tensor(X, requires_grad=True)
    y = fn(lib, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        (1.0 / (y - 1.0)).sum().backward()
    return x.grad.detach().numpy()


@pytest.mark.parametrize("name,fn", [
    ("clamp_min", lambda lib, x: x.clamp(min=1.0)),
    ("clamp_both", lambda lib, x: x.clamp(1.0, 2.5)),
    ("clamp_max", lambda lib, x: (x - 1.0).clamp(max=1.0) + 0.5),
    ("clamp_tensor", lambda lib, x: lib.clamp(x, min=lib.tensor(np.ones(5, np.float32)))),
    ("hardtanh", lambda lib, x: lib.nn.functional.hardtanh(x, 1.0, 2.5)),
    ("relu", lambda lib, x: lib.relu(x - 1.0) + 1.0),
])
def test_masked_out_positions_get_zero_not_nan(name, fn):
    want = _grad(torch, fn)
    got = _grad(sf, fn)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6)
