"""Sampling of the compat-pass distributions: moments of many seeded draws against the closed
forms (``Z`` standard errors, as tests/distributions/test_sampling.py), quantiles of the
heavy-tailed ones through their cdf, and reparameterised gradients: the per-draw gradient of
``f(rsample)`` w.r.t. each parameter (a batch of ``N`` identical parameters gives ``N``
independent per-draw gradients) has the same mean as torch's, checked by a two-sample test;
plus torch's errors for bad parameters and values."""

import math

import numpy as np
import pytest
import torch

import shardflow
from shardflow import distributions as D

from ._cases import build
from ._cases_more import CASES
from .test_sampling import N, Z, _check_mean, _check_variance
from .test_validation import _message

MOMENT_NAMES = ["poisson", "binomial_probs", "binomial_logits_counts", "geometric_probs",
                "geometric_logits", "negative_binomial_probs", "negative_binomial_logits", "multinomial",
                "half_normal", "gumbel", "student_t_large_df", "chi2", "mixture_normal", "mixture_independent",
                "weibull", "pareto", "kumaraswamy", "inverse_gamma", "fisher_snedecor", "generalized_pareto_bounded",
                "lowrank_mvn", "lowrank_mvn_batched_factor", "continuous_bernoulli", "continuous_bernoulli_taylor"]
# parameters moved where the fourth moment is finite, so the variance check has a standard error
SHIFT = {
    "student_t_large_df": lambda a: [a[0] + 3.0],  # df > 7
    "pareto": lambda a: [a[0], a[1] + 3.0],  # alpha > 5
    "inverse_gamma": lambda a: [a[0] + 4.0, a[1]],  # concentration > 4.5
    "fisher_snedecor": lambda a: [a[0], a[1] + 4.5],  # df2 > 10
}
BY_NAME = {c.name: c for c in CASES}


@pytest.mark.parametrize("name", MOMENT_NAMES)
def test_sample_moments(name):
    case = BY_NAME[name]
    shardflow.manual_seed(0)
    arrays = [p.make(np.random.default_rng(0)) for p in case.params]
    arrays = SHIFT.get(name, lambda a: a)(arrays)
    dist, _ = build(case, shardflow, arrays, "float64")
    x = dist.sample((N,))
    assert not x.requires_grad
    xs = x.numpy().astype(np.float64)
    _check_mean(xs, dist.mean.detach().numpy(), name)
    _check_variance(xs, dist.variance.detach().numpy(), name)


@pytest.mark.parametrize("name", ["cauchy", "half_cauchy", "gumbel", "half_normal"])
def test_sample_quantiles_follow_the_cdf(name):
    """The fraction of draws below ``icdf(q)`` is ``q`` (binomial standard error)."""
    case = BY_NAME[name]
    shardflow.manual_seed(1)
    arrays = [p.make(np.random.default_rng(0)) for p in case.params]
    dist, _ = build(case, shardflow, arrays, "float64")
    x = dist.sample((N,)).numpy()
    for q in (0.1, 0.5, 0.9):
        edge = dist.icdf(shardflow.tensor(q, dtype=shardflow.float64)).detach().numpy()
        frac = (x <= edge).mean(0)
        assert np.all(np.abs(frac - q) <= Z * math.sqrt(q * (1 - q) / N)), f"{name}: q={q} got {frac}"


def test_relaxed_samples_match_torch_in_distribution():
    """No closed-form moments: the means of shardflow's and torch's draws agree (two-sample)."""
    shardflow.manual_seed(2)
    torch.manual_seed(2)
    for make in (lambda m: m.distributions.RelaxedBernoulli(m.tensor(0.6, dtype=m.float64), probs=m.tensor([0.2, 0.5, 0.9], dtype=m.float64)),
                 lambda m: m.distributions.RelaxedOneHotCategorical(m.tensor(0.8, dtype=m.float64), logits=m.tensor([0.1, -1.0, 1.5], dtype=m.float64))):
        a = make(shardflow).sample((N,)).numpy()
        b = make(torch).sample((N,)).numpy()
        se = np.sqrt(a.var(0) / N + b.var(0) / N)
        assert np.all(np.abs(a.mean(0) - b.mean(0)) <= Z * se), (a.mean(0), b.mean(0))
        assert np.all((a >= 0) & (a <= 1))


# (factory of (lib, params...) -> distribution, parameter values, f applied to the draw)
REPARAM = [
    ("cauchy", lambda m, loc, s: m.distributions.Cauchy(loc, s), (0.3, 1.5), lambda x: x.clamp(-5, 5)),
    ("half_normal", lambda m, s: m.distributions.HalfNormal(s), (1.7,), lambda x: x ** 2),
    ("half_cauchy", lambda m, s: m.distributions.HalfCauchy(s), (0.8,), lambda x: x.clamp(max=4.0)),
    ("gumbel", lambda m, loc, s: m.distributions.Gumbel(loc, s), (0.5, 2.0), lambda x: x ** 2),
    ("student_t", lambda m, df, loc, s: m.distributions.StudentT(df, loc, s), (6.0, -0.5, 1.3), lambda x: x ** 2),
    ("chi2", lambda m, df: m.distributions.Chi2(df), (2.5,), lambda x: x.sqrt()),
    ("weibull", lambda m, s, k: m.distributions.Weibull(s, k), (1.3, 1.8), lambda x: x ** 2),
    ("pareto", lambda m, s, a: m.distributions.Pareto(s, a), (0.8, 4.5), lambda x: x.clamp(max=3.0)),
    ("kumaraswamy", lambda m, a, b: m.distributions.Kumaraswamy(a, b), (1.5, 2.5), lambda x: x ** 2),
    ("inverse_gamma", lambda m, a, b: m.distributions.InverseGamma(a, b), (4.0, 1.5), lambda x: x),
    ("fisher_snedecor", lambda m, d1, d2: m.distributions.FisherSnedecor(d1, d2), (5.0, 9.0), lambda x: x.clamp(max=3.0)),
    ("generalized_pareto", lambda m, loc, s, c: m.distributions.GeneralizedPareto(loc, s, c), (0.2, 1.1, -0.15), lambda x: x ** 2),
    ("logistic_normal", lambda m, loc, s: m.distributions.LogisticNormal(loc.unsqueeze(-1) * m.tensor([1.0, -0.5], dtype=loc.dtype), s.unsqueeze(-1)),
     (0.4, 0.9), lambda x: x[..., 0] ** 2 + x[..., 2]),
    ("continuous_bernoulli", lambda m, p: m.distributions.ContinuousBernoulli(probs=p), (0.3,), lambda x: x ** 2),
    ("continuous_bernoulli_taylor", lambda m, p: m.distributions.ContinuousBernoulli(probs=p), (0.5,), lambda x: x ** 2),
    ("lowrank_mvn", lambda m, loc, w, d: m.distributions.LowRankMultivariateNormal(
        loc.unsqueeze(-1).expand(-1, 2), w.reshape(-1, 1, 1).expand(-1, 2, 1) * m.tensor([[1.0], [-0.5]], dtype=w.dtype),
        d.unsqueeze(-1).expand(-1, 2)), (0.3, 0.8, 1.2), lambda x: (x ** 2).sum(-1) + x[..., 0] * x[..., 1]),
    ("relaxed_bernoulli", lambda m, t, p: m.distributions.RelaxedBernoulli(t, probs=p), (0.7, 0.3), lambda x: x ** 2),
    ("relaxed_one_hot", lambda m, t, lg: m.distributions.RelaxedOneHotCategorical(t.unsqueeze(-1), logits=lg.unsqueeze(-1) * m.tensor([1.0, -0.5, 0.2], dtype=lg.dtype)),
     (0.9, 1.2), lambda x: x[..., 0] ** 2),
]


@pytest.mark.parametrize("name,make,values,f", REPARAM, ids=[r[0] for r in REPARAM])
def test_rsample_gradients_match_torch_on_average(name, make, values, f):
    n = 20_000
    grads = {}
    for lib in (shardflow, torch):
        lib.manual_seed(7)
        params = [lib.full((n,), v, dtype=lib.float64, requires_grad=True) for v in values]
        dist = make(lib, *params)
        assert dist.has_rsample
        x = dist.rsample()
        assert tuple(x.shape)[:1] == (n,)
        f(x).sum().backward()
        grads[lib.__name__] = [p.grad.numpy().copy() for p in params]
    for k, (a, b) in enumerate(zip(grads["shardflow"], grads["torch"])):
        assert np.all(np.isfinite(a)), f"{name}: param {k} has non-finite per-draw gradients"
        se = math.sqrt(a.var() / n + b.var() / n)
        assert abs(a.mean() - b.mean()) <= Z * se + 1e-12, f"{name}: param {k} d E[f]/d p {a.mean()} vs torch {b.mean()} (se {se})"


def test_location_scale_rsample_gradients_are_exact():
    shardflow.manual_seed(3)
    for cls in (D.Cauchy, D.StudentT):
        loc = shardflow.tensor([0.5, -1.0], dtype=shardflow.float64, requires_grad=True)
        scale = shardflow.tensor([2.0, 0.5], dtype=shardflow.float64, requires_grad=True)
        dist = cls(loc, scale) if cls is D.Cauchy else cls(5.0, loc, scale)
        x = dist.rsample((50,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [50.0, 50.0])
        eps = (x.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
        np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-10)


def test_discrete_ones_have_no_rsample_and_mixture_sample_needs_no_grad():
    p = shardflow.tensor([0.3, 0.7])
    for dist in (D.Poisson(p), D.Binomial(3, probs=p), D.Geometric(probs=p),
                 D.NegativeBinomial(2.0, probs=p), D.Multinomial(4, probs=p),
                 D.MixtureSameFamily(D.Categorical(probs=p), D.Normal(p, 1.0))):
        assert not dist.has_rsample
        with pytest.raises(NotImplementedError):
            dist.rsample()


def test_sampling_follows_manual_seed():
    for dist in (D.Poisson(shardflow.tensor([2.0, 5.0])), D.Binomial(9, probs=shardflow.tensor([0.4])),
                 D.Cauchy(0.0, 1.0), D.StudentT(shardflow.tensor([3.0]))):
        shardflow.manual_seed(11)
        a = dist.sample((4,)).numpy()
        shardflow.manual_seed(11)
        np.testing.assert_array_equal(a, dist.sample((4,)).numpy())


@pytest.mark.parametrize("build_bad", [
    lambda m: m.distributions.Poisson(m.tensor([1.0, -1.0])),
    lambda m: m.distributions.Binomial(m.tensor([2.5]), probs=m.tensor([0.5])),
    lambda m: m.distributions.Binomial(3, probs=m.tensor([1.5])),
    lambda m: m.distributions.Binomial(3),
    lambda m: m.distributions.Geometric(probs=m.tensor([0.0, 0.5])),
    lambda m: m.distributions.NegativeBinomial(m.tensor([-1.0]), probs=m.tensor([0.5])),
    lambda m: m.distributions.NegativeBinomial(2.0, probs=m.tensor([1.0])),
    lambda m: m.distributions.Multinomial(3.5, probs=m.tensor([0.5, 0.5])),
    lambda m: m.distributions.Cauchy(m.tensor([0.0]), m.tensor([-1.0])),
    lambda m: m.distributions.HalfNormal(m.tensor([0.0])),
    lambda m: m.distributions.StudentT(m.tensor([-2.0])),
    lambda m: m.distributions.Chi2(m.tensor([-2.0])),
    lambda m: m.distributions.Gumbel(m.tensor([0.0]), m.tensor([-2.0])),
    lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(probs=m.ones(3)), m.distributions.Normal(m.zeros(2), 1.0)),
    lambda m: m.distributions.MixtureSameFamily(m.distributions.Normal(m.zeros(2), 1.0), m.distributions.Normal(m.zeros(2), 1.0)),
], ids=["poisson_rate", "binomial_count", "binomial_probs", "binomial_no_param", "geometric_zero",
        "negbin_count", "negbin_probs_one", "multinomial_float_count", "cauchy_scale", "halfnormal_scale",
        "studentt_df", "chi2_df", "gumbel_scale", "mixture_k_mismatch", "mixture_not_categorical"])
def test_parameter_errors_match_torch(build_bad):
    assert _message(lambda: build_bad(shardflow)) == _message(lambda: build_bad(torch))


@pytest.mark.parametrize("call", [
    lambda m: m.distributions.Poisson(m.ones(2)).log_prob(m.tensor([1.0, 0.5])),
    lambda m: m.distributions.Binomial(3, probs=m.tensor([0.5, 0.5])).log_prob(m.tensor([1.0, 4.0])),
    lambda m: m.distributions.Geometric(probs=m.tensor([0.5])).log_prob(m.tensor([-1.0])),
    lambda m: m.distributions.Multinomial(3, probs=m.tensor([0.5, 0.5])).log_prob(m.tensor([2.0, 2.0])),
    lambda m: m.distributions.HalfNormal(m.ones(2)).log_prob(m.tensor([1.0, -1.0])),
    lambda m: m.distributions.RelaxedBernoulli(m.tensor(0.5), probs=m.tensor([0.5])).log_prob(m.tensor([1.5])),
    lambda m: m.distributions.RelaxedOneHotCategorical(m.tensor(0.5), probs=m.tensor([0.5, 0.5])).log_prob(m.tensor([0.7, 0.7])),
    lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(probs=m.ones(2)), m.distributions.Gamma(m.ones(2), 1.0)).log_prob(m.tensor(-1.0)),
], ids=["poisson", "binomial", "geometric", "multinomial", "halfnormal", "relaxed_bernoulli",
        "relaxed_one_hot", "mixture"])
def test_value_errors_match_torch(call):
    assert _message(lambda: call(shardflow)) == _message(lambda: call(torch))


def test_logistic_normal_samples_match_torch_in_distribution():
    shardflow.manual_seed(3)
    torch.manual_seed(3)
    make = lambda m: m.distributions.LogisticNormal(m.tensor([0.3, -0.8, 1.1], dtype=m.float64),  # noqa: E731
                                                    m.tensor([0.5, 1.0, 0.7], dtype=m.float64))
    a, b = make(shardflow).sample((N,)).numpy(), make(torch).sample((N,)).numpy()
    assert a.shape == b.shape == (N, 4)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    se = np.sqrt(a.var(0) / N + b.var(0) / N)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) <= Z * se), (a.mean(0), b.mean(0))


@pytest.mark.parametrize("build_bad", [
    lambda m: m.distributions.Weibull(m.tensor([1.0]), m.tensor([-1.0])),
    lambda m: m.distributions.Pareto(m.tensor([-1.0]), m.tensor([1.0])),
    lambda m: m.distributions.Kumaraswamy(m.tensor([0.0]), m.tensor([1.0])),
    lambda m: m.distributions.InverseGamma(m.tensor([1.0]), m.tensor([-1.0])),
    lambda m: m.distributions.FisherSnedecor(m.tensor([1.0]), m.tensor([0.0])),
    lambda m: m.distributions.LogisticNormal(m.tensor([1.0]), m.tensor([-1.0])),
    lambda m: m.distributions.GeneralizedPareto(m.tensor([0.0]), m.tensor([-1.0]), m.tensor([0.1])),
], ids=["weibull", "pareto", "kumaraswamy", "inverse_gamma", "fisher_snedecor", "logistic_normal",
        "generalized_pareto"])
def test_more_parameter_errors_match_torch(build_bad):
    assert _message(lambda: build_bad(shardflow)) == _message(lambda: build_bad(torch))


@pytest.mark.parametrize("call", [
    lambda m: m.distributions.Pareto(m.tensor([2.0]), m.tensor([1.0])).log_prob(m.tensor([1.0])),
    lambda m: m.distributions.Weibull(m.tensor([1.0]), m.tensor([1.0])).log_prob(m.tensor([-1.0])),
    lambda m: m.distributions.Kumaraswamy(m.tensor([1.0]), m.tensor([1.0])).log_prob(m.tensor([1.5])),
    lambda m: m.distributions.LogisticNormal(m.tensor([1.0]), m.tensor([1.0])).log_prob(m.tensor([0.7, 0.7])),
    lambda m: m.distributions.GeneralizedPareto(m.tensor([0.0]), m.tensor([1.0]), m.tensor([-0.5])).log_prob(m.tensor([3.0])),
], ids=["pareto", "weibull", "kumaraswamy", "logistic_normal", "generalized_pareto_bounded"])
def test_more_value_errors_match_torch(call):
    assert _message(lambda: call(shardflow)) == _message(lambda: call(torch))


def test_lowrank_mvn_sample_covariance():
    shardflow.manual_seed(4)
    loc = np.array([1.0, -2.0, 0.5])
    w = np.array([[1.0, 0.2], [-0.5, 0.7], [0.3, -0.4]])
    d = np.array([0.5, 1.0, 0.3])
    dist = D.LowRankMultivariateNormal(shardflow.tensor(loc), shardflow.tensor(w), shardflow.tensor(d))
    x = dist.sample((N,)).numpy()
    cov = w @ w.T + np.diag(d)
    np.testing.assert_allclose(dist.covariance_matrix.numpy(), cov, rtol=1e-12)
    np.testing.assert_allclose(dist.precision_matrix.numpy(), np.linalg.inv(cov), rtol=1e-10)
    np.testing.assert_allclose(dist.scale_tril.numpy(), np.linalg.cholesky(cov), rtol=1e-10)
    _check_mean(x, loc, "lowrank mean")
    c = x - loc
    _check_mean(c[:, :, None] * c[:, None, :], cov, "lowrank covariance")


def test_von_mises_samples_circular_moments():
    """Draws lie in [-pi, pi); E[cos(x - loc)] = I1/I0 = 1 - variance; E[sin(x - loc)] = 0."""
    shardflow.manual_seed(5)
    loc = np.array([0.3, -2.9, 3.0])
    kappa = np.array([0.5, 2.0, 8.0])
    for dtype in (shardflow.float32, shardflow.float64):
        dist = D.VonMises(shardflow.tensor(loc, dtype=dtype), shardflow.tensor(kappa, dtype=dtype))
        x = dist.sample((N,))
        assert x.dtype == dtype and tuple(x.shape) == (N, 3)
        x = x.numpy().astype(np.float64)
        assert np.all((x >= -np.pi) & (x < np.pi))
        _check_mean(np.cos(x - loc), 1 - dist.variance.numpy().astype(np.float64), "E cos")
        _check_mean(np.sin(x - loc), np.zeros(3), "E sin")
    t = torch.distributions.VonMises(torch.tensor(loc), torch.tensor(kappa))
    np.testing.assert_allclose(dist.variance.numpy(), t.variance.numpy(), rtol=1e-12)


def test_lkj_cholesky_samples_are_correlation_factors_with_the_lkj_marginal():
    """Each off-diagonal correlation of LKJ(eta) in dim d is 2 Beta(b, b) - 1 with
    b = eta - 1 + d/2: mean 0, variance 1 / (2 eta + d - 1)."""
    shardflow.manual_seed(6)
    eta = np.array([0.5, 2.0])
    d = 3
    dist = D.LKJCholesky(d, shardflow.tensor(eta))
    L = dist.sample((N // 4,))
    assert tuple(L.shape) == (N // 4, 2, d, d)
    assert bool(D.constraints.corr_cholesky.check(L).all())
    Ln = L.numpy()
    corr = Ln @ np.swapaxes(Ln, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-10)
    r = corr[..., 1, 0]  # (n, 2)
    _check_mean(r, np.zeros(2), "LKJ correlation mean")
    _check_variance(r, 1.0 / (2 * eta + d - 1), "LKJ correlation variance")


def test_wishart_samples_and_rsample_gradient():
    shardflow.manual_seed(7)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    df = 6.0
    dist = D.Wishart(shardflow.tensor(df, dtype=shardflow.float64), covariance_matrix=shardflow.tensor(cov))
    x = dist.sample((N,)).numpy()
    assert np.all(np.linalg.eigvalsh(x) > 0)
    _check_mean(x, df * cov, "Wishart mean")
    _check_variance(x, dist.variance.numpy(), "Wishart variance")
    # per-draw gradient of trace(X) w.r.t. df and the covariance: E = df tr(cov), so
    # d/d df = tr(cov) and d/d cov = df I (torch's per-draw gradients have the same mean)
    n = 20_000
    grads = {}
    for lib in (shardflow, torch):
        lib.manual_seed(8)
        dfs = lib.full((n,), df, dtype=lib.float64, requires_grad=True)
        c = lib.tensor(cov, requires_grad=True)
        w = lib.distributions.Wishart(dfs, covariance_matrix=c)
        w.rsample().diagonal(dim1=-2, dim2=-1).sum().backward()
        grads[lib.__name__] = (dfs.grad.numpy(), c.grad.numpy())
    g_df = grads["shardflow"][0]
    _check_mean(g_df[:, None], np.array([np.trace(cov)]), "d E tr X / d df")
    np.testing.assert_allclose(grads["shardflow"][1] / n, df * np.eye(2), atol=0.05)
    np.testing.assert_allclose(grads["torch"][1] / n, df * np.eye(2), atol=0.05)


SCALAR_BUILDS = [
    lambda m: m.distributions.Poisson(3.0), lambda m: m.distributions.Binomial(4, probs=0.3),
    lambda m: m.distributions.Geometric(0.2), lambda m: m.distributions.NegativeBinomial(3.0, probs=0.4),
    lambda m: m.distributions.Cauchy(0.0, 1.0), lambda m: m.distributions.StudentT(3.0),
    lambda m: m.distributions.Gumbel(0.0, 1.0), lambda m: m.distributions.HalfNormal(1.0),
    lambda m: m.distributions.HalfCauchy(1.0), lambda m: m.distributions.Chi2(3.0),
    lambda m: m.distributions.Weibull(1.0, 2.0), lambda m: m.distributions.Pareto(1.0, 2.0),
    lambda m: m.distributions.Kumaraswamy(1.0, 2.0), lambda m: m.distributions.InverseGamma(2.0, 1.0),
    lambda m: m.distributions.FisherSnedecor(3.0, 5.0), lambda m: m.distributions.LogisticNormal(0.0, 1.0),
    lambda m: m.distributions.VonMises(0.0, 1.0), lambda m: m.distributions.ContinuousBernoulli(0.3),
    lambda m: m.distributions.GeneralizedPareto(0.0, 1.0, 0.1),
    lambda m: m.distributions.RelaxedBernoulli(m.tensor(0.5), probs=0.3),
    lambda m: m.distributions.LKJCholesky(2),
]


@pytest.mark.parametrize("make", SCALAR_BUILDS, ids=range(len(SCALAR_BUILDS)))
def test_python_number_parameters_sample_shapes_and_dtypes_as_torch(make):
    """Parameters given as Python numbers: empty batch shape, default dtype, every shape."""
    s, t = make(shardflow), make(torch)
    assert tuple(s.batch_shape) == tuple(t.batch_shape) and tuple(s.event_shape) == tuple(t.event_shape)
    for shape in ((), (3,), (2, 2)):
        a, b = s.sample(shape), t.sample(shape)
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert bool(s.support.check(a).all())
