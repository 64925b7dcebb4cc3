"""Gradients of max/min reductions whose result is NaN, against PyTorch (found by
tests/ops/fuzz): shardflow gave 0, so a NaN in the forward left finite gradients behind
(GradScaler's inf/NaN check would not skip the step). torch: ``max()`` / ``min()`` split
the gradient among the NaNs; ``amax`` / ``amin`` give NaN over the whole slice."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = [[float("nan"), float("nan"), 1.0], [1.0, 2.0, 2.0]]


@pytest.mark.parametrize("f", [
    lambda L, x: L.amax(x), lambda L, x: L.amax(x, 0), lambda L, x: L.amin(x, -1),
    lambda L, x: L.amax(x, -1, keepdim=True), lambda L, x: L.max(x), lambda L, x: L.min(x),
    lambda L, x: L.max(x, -1).values, lambda L, x: x[0, :1].amax(),
], ids=["amax_all", "amax_0", "amin_-1", "amax_keep", "max_all", "min_all", "max_dim", "amax_one"])
def test_extreme_grad_with_nan_matches_torch(f):
    got = []
    for L in (torch, sf):
        x = L.tensor(X, requires_grad=True)
        y = f(L, x)
        (g,) = L.autograd.grad((y * L.full(tuple(y.shape), 3.0)).sum(), [x])
        got.append(g.numpy())
    np.testing.assert_array_equal(got[1], got[0])  # NaN at the same places
