"""``torch.poisson``, ``torch.binomial`` and ``Tensor.cauchy_`` / ``geometric_`` /
``log_normal_`` (``ops/random_draws.py``): shapes, dtypes, graph (zero gradients, as
torch), seeded repeatability, moments of many draws (``Z`` standard errors) and torch's
errors for bad arguments."""

import math

import numpy as np
import pytest
import torch

import shardflow

from .test_sampling import N, Z, _check_mean, _check_variance


def test_poisson_and_binomial_match_torch_in_shape_dtype_and_graph():
    for lib in (shardflow, torch):
        rate = lib.tensor([[0.5, 3.0], [10.0, 0.0]], requires_grad=True)
        y = lib.poisson(rate)
        assert tuple(y.shape) == (2, 2) and y.dtype == lib.float32 and y.requires_grad
        y.sum().backward()
        np.testing.assert_array_equal(rate.grad.numpy(), 0.0)
        assert y.detach().numpy()[1, 1] == 0.0
        n = lib.tensor([5.0, 0.0, 12.0], dtype=lib.float64, requires_grad=True)
        p = lib.tensor([0.3, 0.5, 1.0], dtype=lib.float64, requires_grad=True)
        b = lib.binomial(n, p)
        assert b.dtype == lib.float64 and b.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            b.sum().backward()
        assert b.detach().numpy()[1] == 0.0 and b.detach().numpy()[2] == 12.0


def test_draws_follow_the_generator():
    g1, g2 = shardflow.Generator().manual_seed(3), shardflow.Generator().manual_seed(3)
    r = shardflow.tensor([1.0, 4.0, 9.0])
    np.testing.assert_array_equal(shardflow.poisson(r, generator=g1).numpy(), shardflow.poisson(r, generator=g2).numpy())
    shardflow.manual_seed(4)
    a = shardflow.empty(5).cauchy_().numpy()
    shardflow.manual_seed(4)
    np.testing.assert_array_equal(a, shardflow.empty(5).cauchy_().numpy())


def test_moments_of_the_draws():
    shardflow.manual_seed(5)
    rate = np.array([0.3, 2.0, 15.0])
    x = shardflow.poisson(shardflow.tensor(np.tile(rate, (N, 1)))).numpy()
    _check_mean(x, rate, "poisson mean")
    _check_variance(x, rate, "poisson variance")
    n, p = np.array([1.0, 7.0, 30.0]), np.array([0.5, 0.2, 0.9])
    x = shardflow.binomial(shardflow.tensor(np.tile(n, (N, 1))), shardflow.tensor(np.tile(p, (N, 1)))).numpy()
    _check_mean(x, n * p, "binomial mean")
    _check_variance(x, n * p * (1 - p), "binomial variance")
    g = shardflow.empty(N, 1, dtype=shardflow.float64).geometric_(0.3).numpy()
    assert g.min() >= 1 and np.all(g == np.round(g))
    _check_mean(g, np.array([1 / 0.3]), "geometric mean")  # trials to the first success
    _check_variance(g, np.array([0.7 / 0.09]), "geometric variance")
    ln = shardflow.empty(N, 1, dtype=shardflow.float64).log_normal_(0.2, 0.5).numpy()
    _check_mean(ln, np.array([math.exp(0.2 + 0.125)]), "log-normal mean")
    c = shardflow.empty(N, dtype=shardflow.float64).cauchy_(1.0, 2.0).numpy()
    for q in (0.25, 0.5, 0.75):  # quantiles median + sigma tan(pi (q - 1/2))
        frac = (c <= 1.0 + 2.0 * math.tan(math.pi * (q - 0.5))).mean()
        assert abs(frac - q) <= Z * math.sqrt(q * (1 - q) / N)


def test_integer_tensor_geometric_fill_as_torch():
    shardflow.manual_seed(6)
    t = shardflow.empty(4, dtype=shardflow.int64).geometric_(0.5)
    assert t.dtype == shardflow.int64 and bool((t >= 1).all())


@pytest.mark.parametrize("call", [
    lambda m: m.empty(3).geometric_(0),
    lambda m: m.empty(3).geometric_(1.5),
    lambda m: m.empty(3).log_normal_(std=-1),
    lambda m: m.empty(3).cauchy_(sigma=-1),
    lambda m: m.poisson(m.tensor([-1.0])),
    lambda m: m.poisson(m.tensor([1, 2])),
], ids=["geometric_zero", "geometric_above_one", "log_normal_std", "cauchy_sigma", "poisson_negative",
        "poisson_long"])
def test_errors_match_torch(call):
    def message(lib):
        with pytest.raises(Exception) as info:
            call(lib)
        return type(info.value), str(info.value)
    assert message(shardflow) == message(torch)
