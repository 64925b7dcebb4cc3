"""Regression tests for the differences the nn differential fuzzers (``test_fuzz_nn_*.py``)
found, each against PyTorch on the smallest input that showed it."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf


def _both(fn):
    return fn(torch), fn(sf)


def _close(s, t):
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_lp_pool_infinite_norm_is_max_of_abs(p):
    # was (avg_pool(x**inf) * k) ** 0: ones where torch takes max(|x|) over each window
    x = [[0.0, -3.0, 2.0, 0.5]]
    t, s = _both(lambda L: L.nn.functional.lp_pool1d(L.tensor(x), p, 2))
    _close(s, t)
    t, s = _both(lambda L: L.nn.functional.lp_pool2d(L.tensor([x[0], x[0]])[None], p, 2, 1))
    _close(s, t)


def test_max_pool_window_of_minus_inf_reports_first_in_bounds_position():
    # a window with only -inf kept kernel position 0 (in the padding): index and gradient lost
    def run(L):
        x = L.tensor([[[-math.inf, 1.0], [-math.inf, -math.inf]]], requires_grad=True)
        y, i = L.nn.functional.max_pool2d(x, 2, 1, 1, return_indices=True)
        y.sum().backward()
        return i, x.grad
    (ti, tg), (si, sg) = _both(run)
    np.testing.assert_array_equal(si.numpy(), ti.numpy())
    _close(sg, tg)
    t, s = _both(lambda L: repr(L.nn.functional.max_pool2d(  # the node's name read a missing shape
        L.ones(1, 1, 2, 2, requires_grad=True), 2, return_indices=True)[0].grad_fn))
    assert "MaxPool2DWithIndicesBackward0" in s and "MaxPool2DWithIndicesBackward0" in t


def test_avg_pool3d_input_smaller_than_kernel_raises():
    x = np.zeros((1, 1, 1, 1), np.float32)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        torch.nn.functional.avg_pool3d(torch.tensor(x), (1, 1, 2), ceil_mode=True)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        sf.nn.functional.avg_pool3d(sf.tensor(x), (1, 1, 2), ceil_mode=True)


def test_adaptive_avg_pool_nan_stays_in_its_bin():
    # the pooling-matrix GEMM spread NaN (0 * nan) to every bin of the row
    x = [[[0.0, math.nan, 1.0, math.inf]]]
    for size in [(1, 4), (1, 2), (1, 3)]:
        t, s = _both(lambda L: L.nn.functional.adaptive_avg_pool2d(L.tensor(x), size))
        np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_fractional_max_pool_random_samples_requiring_grad_raises():
    def run(L):
        return L.nn.functional.fractional_max_pool2d(L.zeros(1, 1, 2, 2), 1, output_size=1,
                                                    _random_samples=L.zeros(1, 1, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'random_samples'"):
        run(torch)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'random_samples'"):
        run(sf)
