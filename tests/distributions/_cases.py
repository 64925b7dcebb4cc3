"""Distributions built the same way in shardflow and torch, for the comparison tests.

A ``Case`` names a factory ``make(D, lib, *params)`` written once and run with
``D = torch.distributions`` / ``shardflow.distributions`` (``lib`` the matching top-level
module), its parameters (random arrays of a kind, all requiring grad), the points where
``log_prob``/``cdf`` are evaluated (inside the support) and the methods to compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Param:
    shape: tuple
    kind: str = "real"  # real | positive | prob | matrix

    def make(self, rng):
        if self.kind == "real":
            return rng.standard_normal(self.shape)
        if self.kind == "positive":
            return rng.uniform(0.5, 2.5, self.shape)
        if self.kind == "prob":
            return rng.uniform(0.1, 0.9, self.shape)
        if self.kind == "matrix":
            return rng.standard_normal(self.shape) * 0.5
        raise ValueError(self.kind)


@dataclass
class Case:
    name: str
    make: object  # (D, lib, *params) -> distribution
    params: list
    value: object = None  # rng -> array of points in the support (None: no log_prob)
    methods: tuple = ("mean", "variance", "stddev", "entropy", "log_prob")
    quantiles: bool = False  # also compare icdf at a few probabilities
    tol: float = 1e-5
    extra: dict = field(default_factory=dict)


def spd(lib, a):
    """A symmetric positive-definite matrix from any square ``a`` (batched)."""
    n = a.shape[-1]
    return a @ a.mT + n * lib.eye(n, dtype=a.dtype)


def lower(lib, a):
    n = a.shape[-1]
    return a.tril() + 2 * lib.eye(n, dtype=a.dtype)


def _simplex(rng, shape):
    x = rng.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


CASES = [
    Case("normal", lambda D, m, loc, s: D.Normal(loc, s), [Param((2, 3)), Param((3,), "positive")],
         value=lambda r: r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("normal_scalar_scale", lambda D, m, loc: D.Normal(loc, 0.7), [Param((3,))],
         value=lambda r: r.standard_normal((3,))),
    Case("laplace", lambda D, m, loc, s: D.Laplace(loc, s), [Param((3,)), Param((3,), "positive")],
         value=lambda r: r.standard_normal((5, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("exponential", lambda D, m, rate: D.Exponential(rate), [Param((3,), "positive")],
         value=lambda r: r.uniform(0.1, 3.0, (2, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob", "cdf"), quantiles=True),
    Case("uniform", lambda D, m, lo, w: D.Uniform(lo, lo + w), [Param((3,)), Param((3,), "positive")],
         value=None, methods=("mean", "variance", "stddev", "entropy")),
    Case("lognormal", lambda D, m, loc, s: D.LogNormal(loc, s), [Param((3,)), Param((3,), "positive")],
         value=lambda r: r.uniform(0.2, 4.0, (2, 3)),
         methods=("mean", "variance", "entropy", "log_prob", "cdf")),
    Case("gamma", lambda D, m, a, b: D.Gamma(a, b), [Param((2, 3), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.1, 4.0, (2, 3))),
    Case("beta", lambda D, m, a, b: D.Beta(a, b), [Param((3,), "positive"), Param((3,), "positive")],
         value=lambda r: r.uniform(0.05, 0.95, (4, 3))),
    Case("dirichlet", lambda D, m, a: D.Dirichlet(a), [Param((2, 4), "positive")],
         value=lambda r: _simplex(r, (3, 2, 4))),
    Case("bernoulli_probs", lambda D, m, p: D.Bernoulli(probs=p), [Param((2, 3), "prob")],
         value=lambda r: (r.random((4, 2, 3)) < 0.5).astype(np.float64)),
    Case("bernoulli_logits", lambda D, m, lg: D.Bernoulli(logits=lg), [Param((3,))],
         value=lambda r: (r.random((3,)) < 0.5).astype(np.float64)),
    Case("categorical_probs", lambda D, m, p: D.Categorical(probs=p), [Param((2, 5), "positive")],
         value=lambda r: r.integers(0, 5, (3, 2)), methods=("entropy", "log_prob")),
    Case("categorical_logits", lambda D, m, lg: D.Categorical(logits=lg), [Param((5,))],
         value=lambda r: r.integers(0, 5, (4,)), methods=("entropy", "log_prob")),
    Case("one_hot_categorical", lambda D, m, p: D.OneHotCategorical(probs=p), [Param((2, 4), "positive")],
         value=lambda r: np.eye(4)[r.integers(0, 4, (3, 2))]),
    Case("independent_normal", lambda D, m, loc, s: D.Independent(D.Normal(loc, s), 1),
         [Param((2, 3)), Param((2, 3), "positive")], value=lambda r: r.standard_normal((4, 2, 3))),
    Case("mvn_covariance", lambda D, m, loc, a: D.MultivariateNormal(loc, covariance_matrix=spd(m, a)),
         [Param((3,)), Param((3, 3), "matrix")], value=lambda r: r.standard_normal((5, 3)),
         methods=("mean", "variance", "stddev", "entropy", "log_prob"), tol=1e-4),
    Case("mvn_scale_tril_batched", lambda D, m, loc, a: D.MultivariateNormal(loc, scale_tril=lower(m, a)),
         [Param((2, 3)), Param((3, 3), "matrix")], value=lambda r: r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "entropy", "log_prob"), tol=1e-4),
    Case("mvn_precision", lambda D, m, loc, a: D.MultivariateNormal(loc, precision_matrix=spd(m, a)),
         [Param((3,)), Param((2, 3, 3), "matrix")], value=lambda r: r.standard_normal((4, 2, 3)),
         methods=("mean", "variance", "entropy", "log_prob"), tol=1e-4),
    Case("tanh_normal", lambda D, m, loc, s: D.TransformedDistribution(
        D.Normal(loc, s), [D.transforms.TanhTransform(), D.transforms.AffineTransform(0.5, 2.0)]),
        [Param((3,)), Param((3,), "positive")], value=lambda r: r.uniform(-1.4, 2.4, (2, 3)),
        methods=("log_prob",)),
    Case("sigmoid_exp_power", lambda D, m, loc, s: D.TransformedDistribution(
        D.Normal(loc, s), [D.transforms.SigmoidTransform(), D.transforms.PowerTransform(2.0)]),
        [Param((3,)), Param((3,), "positive")], value=lambda r: r.uniform(0.05, 0.9, (2, 3)),
        methods=("log_prob",)),
    Case("softplus_normal", lambda D, m, loc, s: D.TransformedDistribution(
        D.Normal(loc, s), D.transforms.SoftplusTransform()),
        [Param((3,)), Param((3,), "positive")], value=lambda r: r.uniform(0.1, 3.0, (2, 3)),
        methods=("log_prob",)),
]


KL_PAIRS = [
    ("normal", "normal"), ("normal", "laplace"), ("laplace", "laplace"), ("laplace", "normal"),
    ("exponential", "exponential"), ("exponential", "gamma"), ("exponential", "normal"),
    ("gamma", "gamma"), ("gamma", "exponential"), ("gamma", "normal"), ("beta", "beta"),
    ("beta", "exponential"), ("beta", "gamma"), ("beta", "normal"), ("beta", "uniform01"),
    ("uniform01", "beta"), ("uniform", "normal"), ("uniform", "uniform_wide"),
    ("uniform_pos", "gamma_1d"), ("uniform_pos", "exponential"), ("dirichlet", "dirichlet"),
    ("bernoulli_probs", "bernoulli_probs"), ("categorical_probs", "categorical_probs"),
    ("one_hot_categorical", "one_hot_categorical"), ("independent_normal", "independent_normal"),
    ("mvn_covariance", "mvn_covariance"), ("mvn_scale_tril_batched", "mvn_covariance"),
    ("lognormal", "lognormal"),
    # infinite by support
    ("normal", "gamma"), ("gamma", "uniform01"), ("exponential", "uniform01"),
]

# distributions only the KL table uses (shapes compatible with the cases above)
KL_ONLY = [
    Case("gamma_1d", lambda D, m, a, b: D.Gamma(a, b), [Param((3,), "positive"), Param((3,), "positive")]),
    Case("uniform01", lambda D, m, x: D.Uniform(0.2 + 0 * x, 0.7 + 0 * x), [Param((3,))]),
    Case("uniform_pos", lambda D, m, lo, w: D.Uniform(lo, lo + w), [Param((3,), "positive"), Param((3,), "positive")]),
    Case("uniform_wide", lambda D, m, lo, w: D.Uniform(lo - 3.0, lo + w + 3.0), [Param((3,)), Param((3,), "positive")]),
]

BY_NAME = {c.name: c for c in CASES + KL_ONLY}


def build(case: Case, lib, arrays, dtype):
    """(distribution, parameter tensors) for ``lib`` (shardflow or torch) from float64 arrays."""
    D = lib.distributions
    params = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    return case.make(D, lib, *params), params

