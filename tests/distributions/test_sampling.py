"""Sampling: shapes and dtypes against torch, and moments checked statistically.

Every moment check allows ``Z`` standard errors of the estimate, the standard error computed
from the sample size (``sqrt(var / n)`` for a mean, ``sqrt((m4 - var^2) / n)`` for a variance,
the sample's own fourth moment for ``m4``); ``Z = 5`` makes a false failure a ~1e-6 event,
and the generator is seeded, so a run is reproducible. The implicit reparameterisation
gradients of Gamma/Beta/Dirichlet are checked twice: per draw against torch's
``_standard_gamma_grad`` / ``_dirichlet_grad`` at the same draw, and on average against
the derivative of the mean in closed form.
"""

import numpy as np
import pytest
import torch

import shardflow
from shardflow import distributions as D

from ._cases import BY_NAME, CASES, build

Z = 5.0
N = 40_000


def _check_mean(samples, mean, what):
    """``samples``: (n, ...) array; ``mean``: the expected mean per trailing entry."""
    n = samples.shape[0]
    se = samples.std(0) / np.sqrt(n)
    err = np.abs(samples.mean(0) - mean)
    assert np.all(err <= Z * se + 1e-12), f"{what}: mean off by {err} (allowed {Z} x se = {Z * se})"


def _check_variance(samples, var, what):
    n = samples.shape[0]
    c = samples - samples.mean(0)
    v_hat = (c ** 2).mean(0)
    m4 = (c ** 4).mean(0)
    se = np.sqrt(np.maximum(m4 - v_hat ** 2, 0) / n)
    err = np.abs(v_hat - var)
    assert np.all(err <= Z * se + 1e-12), f"{what}: variance off by {err} (allowed {Z} x se = {Z * se})"


MOMENT_CASES = [c for c in CASES if c.name not in ("categorical_probs", "categorical_logits")
                and not c.name.startswith(("tanh", "sigmoid", "softplus"))]


@pytest.mark.parametrize("case", MOMENT_CASES, ids=[c.name for c in MOMENT_CASES])
def test_sample_moments(case):
    shardflow.manual_seed(0)
    arrays = [p.make(np.random.default_rng(0)) for p in case.params]
    dist, _ = build(case, shardflow, arrays, "float64")
    x = dist.sample((N,))
    assert not x.requires_grad
    xs = x.numpy().astype(np.float64)
    _check_mean(xs, dist.mean.detach().numpy(), case.name)
    _check_variance(xs, dist.variance.detach().numpy(), case.name)


def test_categorical_frequencies():
    shardflow.manual_seed(1)
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    x = D.Categorical(probs=shardflow.tensor(p)).sample((N,)).numpy()  # (N, 2)
    assert x.dtype == np.int64 and x.shape == (N, 2)
    onehot = (x[..., None] == np.arange(3)).astype(np.float64)  # (N, 2, 3)
    _check_mean(onehot, p, "categorical frequencies")


def test_mvn_sample_covariance():
    shardflow.manual_seed(2)
    cov = np.array([[2.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 0.5]])
    loc = np.array([1.0, -2.0, 0.5])
    x = D.MultivariateNormal(shardflow.tensor(loc), shardflow.tensor(cov)).sample((N,)).numpy()
    _check_mean(x, loc, "mvn mean")
    c = x - loc
    products = c[:, :, None] * c[:, None, :]  # (N, 3, 3): their mean is the covariance
    _check_mean(products, cov, "mvn covariance")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sample_and_rsample_shapes_match_torch(case):
    arrays = [p.make(np.random.default_rng(0)) for p in case.params]
    s, sp = build(case, shardflow, arrays, "float32")
    t, _ = build(case, torch, arrays, "float32")
    for shape in ((), (5,), (2, 3)):
        a, b = s.sample(shape), t.sample(shape)
        assert tuple(a.shape) == tuple(b.shape), f"{case.name} sample{shape}"
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], f"{case.name} sample dtype"
        assert not a.requires_grad
    if t.has_rsample:
        r = s.rsample((4,))
        assert tuple(r.shape) == tuple(t.rsample((4,)).shape)
        assert r.requires_grad, f"{case.name}: rsample has no graph to its parameters"
        r.sum().backward()
        assert any(p.grad is not None and np.any(p.grad.numpy()) for p in sp)
    else:
        with pytest.raises(NotImplementedError):
            s.rsample()


def test_location_scale_rsample_gradients_are_exact():
    """x = loc + eps * scale: d sum(x)/d loc = n, d sum(x)/d scale = sum(eps)."""
    shardflow.manual_seed(3)
    loc = shardflow.tensor([0.5, -1.0], requires_grad=True)
    scale = shardflow.tensor([2.0, 0.5], requires_grad=True)
    x = D.Normal(loc, scale).rsample((100,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [100.0, 100.0])
    eps = (x.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-5)


def test_gamma_rsample_implicit_gradient_per_draw_and_on_average():
    shardflow.manual_seed(4)
    for a in (0.3, 1.5, 12.0):
        alpha = shardflow.full((N,), a, dtype=shardflow.float64, requires_grad=True)
        rate = 2.0
        x = D.Gamma(alpha, rate).rsample()
        x.sum().backward()
        g = alpha.grad.numpy()  # dx_i / d alpha_i
        want = torch._standard_gamma_grad(torch.full((N,), a, dtype=torch.float64),
                                          torch.tensor(x.detach().numpy() * rate)).numpy() / rate
        np.testing.assert_allclose(g, want, rtol=1e-10, err_msg=f"alpha={a}")
        _check_mean(g[:, None], np.array([1.0 / rate]), f"d E[x]/d alpha, alpha={a}")


def test_beta_and_dirichlet_rsample_implicit_gradients():
    shardflow.manual_seed(5)
    a0, b0 = 2.0, 3.5
    a = shardflow.full((N,), a0, dtype=shardflow.float64, requires_grad=True)
    b = shardflow.full((N,), b0, dtype=shardflow.float64, requires_grad=True)
    x = D.Beta(a, b).rsample()
    x.sum().backward()
    s = a0 + b0
    _check_mean(a.grad.numpy()[:, None], np.array([b0 / s ** 2]), "d E[beta]/d a")
    _check_mean(b.grad.numpy()[:, None], np.array([-a0 / s ** 2]), "d E[beta]/d b")
    # per draw: torch's gradient formula at the same draws
    xt = torch.tensor(np.stack([x.detach().numpy(), 1 - x.detach().numpy()], -1))
    conc = torch.tensor([[a0, b0]], dtype=torch.float64).expand(N, 2)
    grad = torch._dirichlet_grad(xt, conc, conc.sum(-1, True).expand_as(conc))
    per_draw = (grad * (torch.tensor([1.0, 0.0]) - xt[:, :1])).numpy()  # d x_0 / d alpha
    np.testing.assert_allclose(a.grad.numpy(), per_draw[:, 0], rtol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), per_draw[:, 1], rtol=1e-8)

    conc = np.array([0.7, 2.0, 4.0])
    c = shardflow.tensor(np.tile(conc, (N, 1)), requires_grad=True)
    y = D.Dirichlet(c).rsample()  # (N, 3)
    y[:, 0].sum().backward()
    total = conc.sum()
    want = np.array([(total - conc[0]) / total ** 2, -conc[0] / total ** 2, -conc[0] / total ** 2])
    _check_mean(c.grad.numpy(), want, "d E[x_0]/d alpha")


def test_discrete_rsample_raises_as_torch():
    p = shardflow.tensor([0.3, 0.7])
    for dist in (D.Categorical(probs=p), D.Bernoulli(probs=p), D.OneHotCategorical(probs=p)):
        with pytest.raises(NotImplementedError):
            dist.rsample()


def test_straight_through_one_hot_passes_gradient_to_probs():
    shardflow.manual_seed(6)
    p = shardflow.tensor([0.2, 0.3, 0.5], requires_grad=True)
    y = D.OneHotCategoricalStraightThrough(probs=p).rsample((7,))
    assert sorted(y.detach().numpy().sum(-1).tolist()) == [1.0] * 7
    (y * shardflow.tensor([1.0, 2.0, 3.0])).sum().backward()
    # d/dp of (probs) with probs = p / p.sum(): 7 * (w - <w, probs>) / sum(p)
    w = np.array([1.0, 2.0, 3.0])
    probs = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(p.grad.numpy(), 7 * (w - w @ probs), rtol=1e-5)


def test_sampling_follows_manual_seed():
    dist = BY_NAME["gamma"]
    arrays = [p.make(np.random.default_rng(0)) for p in dist.params]
    d, _ = build(dist, shardflow, arrays, "float32")
    shardflow.manual_seed(11)
    a = d.sample((3,)).numpy()
    shardflow.manual_seed(11)
    np.testing.assert_array_equal(a, d.sample((3,)).numpy())
