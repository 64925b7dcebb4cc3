"""std's gradient over a constant slice (std == 0) against PyTorch (found by tests/ops/fuzz):
torch's std_backward is 0 there (``masked_fill_(std == 0, 0)``); shardflow's float32/float64
backward computed 0 * inf = NaN, which poisoned every parameter behind a normalisation of a
constant row. First and second order, std and std_mean, whole-tensor and per-dim."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0], [0.0, 0.0, 0.0]]
W = [[1.0, 2.0, 3.0], [1.0, -1.0, 2.0], [0.5, 0.5, 1.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("f", [lambda L, x: x.std(1), lambda L, x: x.std(1, correction=0),
                               lambda L, x: x[0].std(), lambda L, x: L.std_mean(x, 1)[0],
                               lambda L, x: x[2:].std(dim=(0, 1), keepdim=True)],
                         ids=["std_dim", "std_c0", "std_all", "std_mean", "std_dims"])
def test_std_grad_at_zero_spread_matches_torch(f, dtype):
    got = {}
    for L in (torch, sf):
        x = L.tensor(X, dtype=getattr(L, dtype), requires_grad=True)
        y = f(L, x)
        (gx,) = L.autograd.grad((y * (y.detach() + 1)).sum(), x, create_graph=True)
        (ggx,) = L.autograd.grad((gx * L.tensor(W, dtype=x.dtype)).sum(), x)
        got[L] = gx.detach().numpy(), ggx.numpy()
    for s, t in zip(got[sf], got[torch]):
        assert not np.isnan(s).any()
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)
