"""Cases (``_cases.Case``) for the distributions of the compat pass: the same factory run
with ``torch.distributions`` and ``shardflow.distributions``, the points where
``log_prob``/``cdf`` are evaluated, and the KL pairs torch registers between them."""

from __future__ import annotations

import numpy as np

from ._cases import BY_NAME, Case, Param, lower, spd


def _counts(hi):
    return lambda r: r.integers(0, hi + 1, (4, 2, 3)).astype(np.float64)


def _simplex(r, shape):
    x = r.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)




def _away_from_half(p):
    """(0.1, 0.9) -> (0.08, 0.4) U (0.6, 0.92)."""
    return p * 0.8 + 0.2 * (p > 0.5).to(p.dtype)


MOMENTS = ("mean", "variance", "stddev", "entropy", "log_prob")

CASES = [
    Case("poisson", lambda D, m, rate: D.Poisson(rate), [Param((2, 3), "positive")],
         value=_counts(6), methods=("mean", "variance", "stddev", "log_prob")),
    Case("binomial_probs", lambda D, m, p: D.Binomial(5, probs=p), [Param((2, 3), "prob")],
         value=_counts(5), methods=MOMENTS),
    Case("binomial_logits_counts", lambda D, m, lg: D.Binomial(m.tensor([3.0, 7.0, 2.0], dtype=lg.dtype), logits=lg),
         [Param((2, 3))], value=lambda r: r.integers(0, 3, (4, 2, 3)).astype(np.float64),
         methods=("mean", "variance", "log_prob")),
    Case("geometric_probs", lambda D, m, p: D.Geometric(probs=p), [Param((2, 3), "prob")],
         value=_counts(8), methods=MOMENTS),
    Case("geometric_logits", lambda D, m, lg: D.Geometric(logits=lg), [Param((3,))],
         value=lambda r: r.integers(0, 9, (4, 3)).astype(np.float64), methods=MOMENTS),
    Case("negative_binomial_probs", lambda D, m, r_, p: D.NegativeBinomial(r_, probs=p),
         [Param((2, 3), "positive"), Param((3,), "prob")], value=_counts(9),
         methods=("mean", "variance", "stddev", "log_prob")),
    Case("negative_binomial_logits", lambda D, m, r_, lg: D.NegativeBinomial(r_, logits=lg),
         [Param((3,), "positive"), Param((3,))], value=_counts(9), methods=("mean", "variance", "log_prob")),
    Case("multinomial", lambda D, m, p: D.Multinomial(6, probs=p), [Param((2, 4), "positive")],
         value=lambda r: r.multinomial(6, [0.25] * 4, size=(3, 2)).astype(np.float64),
         methods=("mean", "variance", "entropy", "log_prob")),
    Case("multinomial_logits", lambda D, m, lg: D.Multinomial(3, logits=lg), [Param((4,))],
         value=lambda r: r.multinomial(3, [0.25] * 4, size=(5,)).astype(np.float64),
         methods=("mean", "variance", "entropy", "log_prob")),
    Case("cauchy", lambda D, m, loc, s: D.Cauchy(loc, s), [Param((2, 3)), Param((3,), "positive")],
         value=lambda r: 3 * r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("half_normal", lambda D, m, s: D.HalfNormal(s), [Param((2, 3), "positive")],
         value=lambda r: r.uniform(0.0, 3.0, (4, 2, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("half_cauchy", lambda D, m, s: D.HalfCauchy(s), [Param((3,), "positive")],
         value=lambda r: r.uniform(0.0, 5.0, (4, 3)),
         methods=("mean", "variance", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("gumbel", lambda D, m, loc, s: D.Gumbel(loc, s), [Param((2, 3)), Param((3,), "positive")],
         value=lambda r: r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("student_t", lambda D, m, df, loc, s: D.StudentT(df, loc, s),
         [Param((2, 3), "positive"), Param((3,)), Param((3,), "positive")],
         value=lambda r: 2 * r.standard_normal((4, 2, 3)), methods=MOMENTS),
    Case("student_t_large_df", lambda D, m, df: D.StudentT(df + 3.0), [Param((3,), "positive")],
         value=lambda r: r.standard_normal((4, 3)), methods=MOMENTS),
    Case("chi2", lambda D, m, df: D.Chi2(df), [Param((2, 3), "positive")],
         value=lambda r: r.uniform(0.1, 4.0, (4, 2, 3)), methods=MOMENTS),
    Case("relaxed_bernoulli", lambda D, m, p: D.RelaxedBernoulli(m.tensor(0.7, dtype=p.dtype), probs=p),
         [Param((2, 3), "prob")], value=lambda r: r.uniform(0.05, 0.95, (4, 2, 3)), methods=("log_prob",)),
    Case("relaxed_bernoulli_logits", lambda D, m, lg: D.RelaxedBernoulli(m.tensor([0.5, 1.0, 2.0], dtype=lg.dtype), logits=lg),
         [Param((3,))], value=lambda r: r.uniform(0.05, 0.95, (4, 3)), methods=("log_prob",)),
    Case("relaxed_one_hot", lambda D, m, lg: D.RelaxedOneHotCategorical(m.tensor(0.5, dtype=lg.dtype), logits=lg),
         [Param((2, 4))], value=lambda r: _simplex(r, (3, 2, 4)), methods=("log_prob",)),
    Case("relaxed_one_hot_probs", lambda D, m, p: D.RelaxedOneHotCategorical(m.tensor(1.3, dtype=p.dtype), probs=p),
         [Param((4,), "positive")], value=lambda r: _simplex(r, (3, 4)), methods=("log_prob",)),
    Case("mixture_normal", lambda D, m, lg, loc, s: D.MixtureSameFamily(D.Categorical(logits=lg), D.Normal(loc, s)),
         [Param((2, 3)), Param((2, 3)), Param((2, 3), "positive")], value=lambda r: r.standard_normal((4, 2)),
         methods=("mean", "variance", "log_prob", "cdf")),
    Case("mixture_independent", lambda D, m, p, loc, s: D.MixtureSameFamily(
        D.Categorical(probs=p), D.Independent(D.Normal(loc, s), 1)),
        [Param((3,), "positive"), Param((3, 2)), Param((3, 2), "positive")], value=lambda r: r.standard_normal((4, 2)),
        methods=("mean", "variance", "log_prob")),
]

CASES += [
    Case("weibull", lambda D, m, s, k: D.Weibull(s, k), [Param((2, 3), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.1, 4.0, (4, 2, 3)), methods=MOMENTS + ("cdf",), quantiles=True),
    Case("pareto", lambda D, m, s, a: D.Pareto(s, a + 1.5), [Param((3,), "positive"), Param((2, 3), "positive")],
         value=lambda r: r.uniform(2.6, 6.0, (4, 2, 3)), methods=MOMENTS + ("cdf",), quantiles=True),
    Case("pareto_heavy", lambda D, m, s, a: D.Pareto(s, a * 0.5), [Param((3,), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(2.6, 6.0, (4, 3)), methods=MOMENTS),
    Case("kumaraswamy", lambda D, m, a, b: D.Kumaraswamy(a, b), [Param((2, 3), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.05, 0.95, (4, 2, 3)), methods=MOMENTS, tol=1e-4),
    Case("inverse_gamma", lambda D, m, a, b: D.InverseGamma(a, b), [Param((2, 3), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.1, 4.0, (4, 2, 3)), methods=MOMENTS),
    Case("fisher_snedecor", lambda D, m, d1, d2: D.FisherSnedecor(d1 * 2, d2 * 2), [Param((2, 3), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.1, 4.0, (4, 2, 3)), methods=("mean", "variance", "log_prob")),
    Case("logistic_normal", lambda D, m, loc, s: D.LogisticNormal(loc, s), [Param((2, 3)), Param((3,), "positive")],
         value=lambda r: _simplex(r, (4, 2, 4)), methods=("log_prob",)),
    Case("generalized_pareto", lambda D, m, loc, s, c: D.GeneralizedPareto(loc, s, c * 0.2),
         [Param((3,), "prob"), Param((3,), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(1.0, 3.5, (4, 3)), methods=("mean", "variance", "entropy", "log_prob", "cdf"),
         quantiles=True),
    Case("generalized_pareto_bounded", lambda D, m, loc, s, c: D.GeneralizedPareto(loc, s, c * -0.2),
         [Param((2, 3), "prob"), Param((3,), "positive"), Param((3,), "prob")],
         value=lambda r: r.uniform(1.0, 1.2, (4, 2, 3)), methods=("mean", "variance", "entropy", "log_prob", "cdf"),
         quantiles=True),
    Case("softmax_transformed", lambda D, m, loc, s: D.TransformedDistribution(
        D.Independent(D.Normal(loc, s), 1), D.transforms.StickBreakingTransform()),
        [Param((2, 3)), Param((2, 3), "positive")], value=lambda r: _simplex(r, (4, 2, 4)), methods=("log_prob",)),
    Case("reshape_transformed", lambda D, m, loc, s: D.TransformedDistribution(
        D.Independent(D.Normal(loc, s), 1), D.transforms.ReshapeTransform((6,), (2, 3))),
        [Param((2, 6)), Param((2, 6), "positive")], value=lambda r: r.standard_normal((4, 2, 2, 3)), methods=("log_prob",)),
    Case("cat_transformed", lambda D, m, loc, s: D.TransformedDistribution(
        D.Normal(loc, s), D.transforms.CatTransform([D.transforms.ExpTransform(), D.transforms.AffineTransform(1.0, 2.0)], dim=-1, lengths=[2, 3])),
        [Param((2, 5)), Param((2, 5), "positive")], value=lambda r: np.abs(r.standard_normal((4, 2, 5))) + 0.1, methods=("log_prob",)),
]

CASES += [
    Case("lowrank_mvn", lambda D, m, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
         [Param((2, 3)), Param((3, 2), "matrix"), Param((3,), "positive")], value=lambda r: r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "entropy", "log_prob", "covariance_matrix", "precision_matrix", "scale_tril"),
         tol=1e-4),
    Case("lowrank_mvn_batched_factor", lambda D, m, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
         [Param((4,)), Param((2, 4, 1), "matrix"), Param((2, 4), "positive")], value=lambda r: r.standard_normal((3, 2, 4)),
         methods=("mean", "variance", "entropy", "log_prob", "covariance_matrix", "precision_matrix", "scale_tril"),
         tol=1e-4),
    Case("von_mises", lambda D, m, loc, k: D.VonMises(loc, k * 2.0), [Param((2, 3)), Param((3,), "positive")],
         value=lambda r: r.uniform(-3.1, 3.1, (4, 2, 3)), methods=("mean", "variance", "log_prob")),
    # probs kept out of (0.4, 0.6) (the Taylor case covers the middle): just outside lims the
    # closed forms cancel in float32, and torch's and shardflow's float32 values and gradients
    # differ there by 1e-4 and 3% (both off the float64 value, which they agree on)
    Case("continuous_bernoulli", lambda D, m, p: D.ContinuousBernoulli(probs=_away_from_half(p)), [Param((2, 3), "prob")],
         value=lambda r: r.uniform(0.0, 1.0, (4, 2, 3)), methods=MOMENTS + ("cdf",), quantiles=True),
    Case("continuous_bernoulli_taylor", lambda D, m, p: D.ContinuousBernoulli(probs=0.4995 + p * 0.001),
         [Param((3,), "prob")], value=lambda r: r.uniform(0.0, 1.0, (4, 3)), methods=MOMENTS + ("cdf",), quantiles=True,
         tol=1e-4),
    Case("continuous_bernoulli_logits", lambda D, m, lg: D.ContinuousBernoulli(logits=lg + 0.6 * lg.sign()), [Param((3,))],
         value=lambda r: r.uniform(0.0, 1.0, (4, 3)), methods=MOMENTS + ("cdf",)),
]



def _corr_cholesky(r, shape):
    """Lower-triangular factors with unit-norm rows and a positive diagonal."""
    a = np.tril(r.standard_normal(shape))
    idx = np.arange(shape[-1])
    a[..., idx, idx] = np.abs(a[..., idx, idx]) + 0.5
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _spd_values(r, shape):
    a = r.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


WISHART_METHODS = ("mean", "variance", "entropy", "log_prob", "covariance_matrix", "precision_matrix", "scale_tril")

CASES += [
    Case("lkj_cholesky", lambda D, m, k: D.LKJCholesky(3, k), [Param((2,), "positive")],
         value=lambda r: _corr_cholesky(r, (4, 2, 3, 3)), methods=("log_prob",)),
    Case("lkj_cholesky_scalar", lambda D, m, k: D.LKJCholesky(4, k.sum()), [Param((1,), "positive")],
         value=lambda r: _corr_cholesky(r, (3, 4, 4)), methods=("log_prob",)),
    Case("wishart_covariance", lambda D, m, df, a: D.Wishart(df + 2.0, covariance_matrix=spd(m, a)),
         [Param((2,), "positive"), Param((3, 3), "matrix")], value=lambda r: _spd_values(r, (4, 2, 3, 3)),
         methods=WISHART_METHODS, tol=1e-4),
    Case("wishart_scale_tril", lambda D, m, df, a: D.Wishart(df + 1.5, scale_tril=lower(m, a)),
         [Param((), "positive"), Param((2, 3, 3), "matrix")], value=lambda r: _spd_values(r, (4, 2, 3, 3)),
         methods=WISHART_METHODS, tol=1e-4),
    Case("wishart_precision", lambda D, m, a: D.Wishart(5.0, precision_matrix=spd(m, a)),
         [Param((2, 2), "matrix")], value=lambda r: _spd_values(r, (4, 2, 2)), methods=WISHART_METHODS, tol=1e-4),
]

# cdf through gammainc: torch has no derivative in the concentration, so it is a constant here
CASES += [
    Case("gamma_cdf", lambda D, m, b: D.Gamma(m.tensor([0.4, 2.0, 35.0], dtype=b.dtype), b), [Param((2, 3), "positive")],
         value=lambda r: r.uniform(0.05, 30.0, (4, 2, 3)), methods=("cdf",)),
    Case("chi2_cdf", lambda D, m, b: D.Chi2(m.tensor([0.7, 3.0, 12.0], dtype=b.dtype) + 0 * b.detach()), [Param((3,), "positive")],
         value=lambda r: r.uniform(0.05, 20.0, (4, 3)), methods=("cdf",)),
]

KL_ONLY = [
    Case("gumbel_1d", lambda D, m, loc, s: D.Gumbel(loc, s), [Param((3,)), Param((3,), "positive")]),
    Case("poisson_1d", lambda D, m, rate: D.Poisson(rate), [Param((3,), "positive")]),
    Case("binomial_7", lambda D, m, p: D.Binomial(7, probs=p), [Param((2, 3), "prob")]),
    Case("binomial_mixed_counts", lambda D, m, p: D.Binomial(m.tensor([5.0, 7.0, 9.0], dtype=p.dtype), probs=p),
         [Param((3,), "prob")]),
    Case("pareto_1d", lambda D, m, s, a: D.Pareto(s, a + 1.0), [Param((3,), "positive"), Param((3,), "positive")]),
    Case("pareto_1d_big", lambda D, m, s, a: D.Pareto(s + 1.0, a), [Param((3,), "positive"), Param((3,), "positive")]),
    Case("normal_1d", lambda D, m, loc, s: D.Normal(loc, s), [Param((3,)), Param((3,), "positive")]),
    Case("lowrank_mvn_4", lambda D, m, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
         [Param((2, 4)), Param((4, 2), "matrix"), Param((4,), "positive")], tol=1e-4),
    Case("continuous_bernoulli_1d", lambda D, m, p: D.ContinuousBernoulli(probs=_away_from_half(p)), [Param((3,), "prob")]),
    Case("uniform_inner", lambda D, m, x: D.Uniform(0.2 + 0 * x, 0.7 + 0 * x), [Param((3,))]),
    Case("bernoulli_1d", lambda D, m, p: D.Bernoulli(probs=p), [Param((3,), "prob")]),
]

MORE_BY_NAME = {c.name: c for c in CASES + KL_ONLY}


def lookup(name):
    return MORE_BY_NAME.get(name) or BY_NAME[name]


KL_PAIRS = [
    ("poisson", "poisson"), ("binomial_probs", "binomial_probs"), ("binomial_7", "binomial_probs"),
    ("binomial_mixed_counts", "binomial_probs"), ("geometric_probs", "geometric_probs"),
    ("geometric_logits", "geometric_probs"), ("gumbel", "gumbel"), ("half_normal", "half_normal"),
    ("cauchy", "cauchy"), ("bernoulli_1d", "poisson_1d"), ("poisson_1d", "bernoulli_1d"),
    ("poisson", "binomial_probs"), ("exponential", "gumbel_1d"), ("gamma_1d", "gumbel_1d"),
    ("gumbel_1d", "normal"), ("normal", "gumbel"), ("uniform", "gumbel_1d"), ("gumbel_1d", "gamma_1d"),
    ("gumbel_1d", "exponential"), ("gumbel_1d", "uniform"), ("chi2", "chi2"), ("chi2", "gamma"),
    ("pareto", "pareto"), ("pareto_1d", "pareto_1d_big"), ("pareto_heavy", "exponential"), ("pareto_heavy", "gamma_1d"),
    ("pareto_heavy", "normal_1d"), ("pareto_1d", "uniform"), ("pareto_1d", "beta"), ("uniform_pos", "pareto_1d"),
    ("uniform", "pareto_1d"), ("beta", "pareto_1d"), ("exponential", "pareto_1d"), ("gamma_1d", "pareto_1d"),
    ("laplace", "pareto_1d"), ("normal_1d", "pareto_heavy"), ("gumbel_1d", "pareto_1d"), ("gumbel_1d", "beta"),
    ("lowrank_mvn", "lowrank_mvn"), ("lowrank_mvn_batched_factor", "lowrank_mvn_4"), ("lowrank_mvn", "mvn_covariance"),
    ("mvn_covariance", "lowrank_mvn"), ("mvn_scale_tril_batched", "lowrank_mvn"),
    ("continuous_bernoulli", "continuous_bernoulli"), ("continuous_bernoulli_1d", "continuous_bernoulli_logits"),
    ("beta", "continuous_bernoulli_logits"), ("continuous_bernoulli_1d", "exponential"),
    ("continuous_bernoulli_1d", "normal_1d"), ("continuous_bernoulli_1d", "uniform"),
    ("continuous_bernoulli_1d", "uniform01"), ("uniform01", "continuous_bernoulli_logits"),
    ("uniform_inner", "continuous_bernoulli_logits"), ("continuous_bernoulli_1d", "pareto_1d"),
    ("exponential", "continuous_bernoulli_logits"), ("gamma_1d", "continuous_bernoulli_logits"),
    ("gumbel_1d", "continuous_bernoulli_logits"), ("laplace", "continuous_bernoulli_logits"),
    ("normal_1d", "continuous_bernoulli_logits"), ("pareto_1d", "continuous_bernoulli_logits"),
]
