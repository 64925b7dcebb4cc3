"""Activations at NaN and at their breakpoints, against PyTorch: the value, the gradient and
(where the gradient depends on x) the second derivative. A NaN reaching hardshrink,
softshrink or threshold came out as 0 or ``value`` (a diverged run looked finite);
hardswish's gradient at exactly +-3 took the other branch. Gradients *at* a NaN are compared
only where torch's are one number: its hardshrink/softshrink/hardtanh kernels give 0 in their
vectorised body and 1 in the scalar tail of the same tensor (a NaN's gradient is NaN's
business anyway: the loss it reaches is NaN)."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = [float("nan"), 1.0, -1.0, 0.2, 0.5, -0.5, 3.0, -3.0, 4.0, -4.0, 6.0, 0.0]

CASES = {
    "hardshrink": lambda L, x: L.nn.functional.hardshrink(x),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x, 0.5),
    "threshold": lambda L, x: L.nn.functional.threshold(x, 0.5, -1.0),
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "hardswish": lambda L, x: L.nn.functional.hardswish(x),
    "Tensor.hardshrink": lambda L, x: x.hardshrink(0.5),
    "nn.Threshold": lambda L, x: L.nn.Threshold(0.5, 20.0)(x),
}


def _run(L, f):
    x = L.tensor(X, dtype=L.float64, requires_grad=True)
    y = f(L, x)
    (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
    gg = None
    if g.requires_grad:
        (gg,) = L.autograd.grad((g * g).sum(), x, allow_unused=True)
    return y.detach().numpy(), g.detach().numpy(), None if gg is None else gg.numpy()


@pytest.mark.parametrize("name", list(CASES))
def test_value_and_gradients_at_nan_and_breakpoints_match_torch(name):
    ty, tg, tgg = _run(torch, CASES[name])
    sy, sg, sgg = _run(sf, CASES[name])
    np.testing.assert_allclose(sy, ty, rtol=1e-12, atol=0)  # NaN where torch has NaN
    at = slice(None) if name in ("threshold", "nn.Threshold", "hardswish") else slice(1, None)
    np.testing.assert_allclose(sg[at], tg[at], rtol=1e-12, atol=0)
    if sgg is not None or name == "hardswish":
        np.testing.assert_allclose(sgg[at], (np.zeros_like(tg) if tgg is None else tgg)[at], rtol=1e-12,
                                   atol=1e-15)


def test_threshold_inplace_writes_into_its_input():
    for L in (torch, sf):
        x = L.tensor([0.1, 0.7, float("nan")])
        out = L.nn.functional.threshold(x, 0.5, -1.0, inplace=True)
        assert out is x or out.data_ptr() == x.data_ptr()
        np.testing.assert_array_equal(x.numpy(), np.array([-1.0, 0.7, np.nan], np.float32))
