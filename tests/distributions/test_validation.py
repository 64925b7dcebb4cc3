"""Argument and sample validation raise PyTorch's errors (the same messages, with
``shardflow.`` where torch prints ``torch.``), before any state changes; ``validate_args=
False`` and ``Distribution.set_default_validate_args`` turn it off as in PyTorch."""

import math

import numpy as np
import pytest
import torch

import shardflow
from shardflow import distributions as D


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value).replace("shardflow.", "torch.")


@pytest.mark.parametrize("build", [
    lambda m: m.distributions.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0])),
    lambda m: m.distributions.Normal(0.0, m.tensor(math.nan)),
    lambda m: m.distributions.Bernoulli(probs=m.tensor([0.2, 1.5])),
    lambda m: m.distributions.Categorical(probs=m.tensor([0.5, -0.5, 1.0])),
    lambda m: m.distributions.Gamma(m.tensor([1.0, 0.0]), 1.0),
    lambda m: m.distributions.Dirichlet(m.tensor([1.0, -2.0])),
    lambda m: m.distributions.Uniform(m.tensor([2.0]), m.tensor([1.0])),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2), scale_tril=m.tensor([[1.0, 0.5], [0.0, 1.0]])),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2), m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda m: m.distributions.Categorical(),
    lambda m: m.distributions.Categorical(probs=m.tensor(0.5)),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2)),
    lambda m: m.distributions.Independent(m.distributions.Normal(m.zeros(2), 1.0), 2),
], ids=["normal_scale", "normal_nan", "bernoulli_probs", "categorical_simplex", "gamma_zero",
        "dirichlet_negative", "uniform_bounds", "mvn_scale_tril", "mvn_not_pd",
        "categorical_no_param", "categorical_0d", "mvn_no_matrix", "independent_too_many"])
def test_parameter_errors_match_torch(build):
    assert _message(lambda: build(shardflow)) == _message(lambda: build(torch))


@pytest.mark.parametrize("call", [
    lambda m: m.distributions.Normal(m.zeros(3), 1.0).log_prob(m.zeros(2)),
    lambda m: m.distributions.Bernoulli(probs=m.tensor([0.3, 0.4])).log_prob(m.tensor([0.0, 0.5])),
    lambda m: m.distributions.Categorical(probs=m.ones(2, 3)).log_prob(m.tensor([0, 3])),
    lambda m: m.distributions.Gamma(m.ones(2), 1.0).log_prob(m.tensor([1.0, -1.0])),
    lambda m: m.distributions.Dirichlet(m.ones(3)).log_prob(m.tensor([0.5, 0.5])),
    lambda m: m.distributions.Beta(m.ones(2), 2.0).log_prob(m.tensor([0.5, 1.5])),
    lambda m: m.distributions.Exponential(m.ones(2)).cdf(m.tensor([1.0, -0.5])),
    lambda m: m.distributions.Normal(0.0, 1.0).log_prob(0.5),
], ids=["shape", "bernoulli_support", "categorical_support", "gamma_support",
        "dirichlet_event_shape", "beta_support", "exponential_cdf", "not_a_tensor"])
def test_sample_errors_match_torch(call):
    assert _message(lambda: call(shardflow)) == _message(lambda: call(torch))


def test_validation_can_be_turned_off():
    d = D.Normal(shardflow.zeros(2), shardflow.tensor([1.0, -1.0]), validate_args=False)
    assert d.scale[1].item() == -1.0
    assert np.isfinite(d.log_prob(shardflow.zeros(2)).numpy()[0])
    D.Distribution.set_default_validate_args(False)
    try:
        D.Bernoulli(probs=shardflow.tensor([2.0]))  # no error
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Bernoulli(probs=shardflow.tensor([2.0]))
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args(1.5)


def test_support_and_arg_constraints_are_torchs():
    pairs = [
        (D.Normal(0.0, 1.0), torch.distributions.Normal(0.0, 1.0)),
        (D.Uniform(0.0, 2.0), torch.distributions.Uniform(0.0, 2.0)),
        (D.Categorical(probs=shardflow.ones(3)), torch.distributions.Categorical(probs=torch.ones(3))),
        (D.Beta(1.0, 2.0), torch.distributions.Beta(1.0, 2.0)),
        (D.Dirichlet(shardflow.ones(3)), torch.distributions.Dirichlet(torch.ones(3))),
        (D.MultivariateNormal(shardflow.zeros(2), shardflow.eye(2)),
         torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))),
        (D.Independent(D.Normal(shardflow.zeros(2), 1.0), 1),
         torch.distributions.Independent(torch.distributions.Normal(torch.zeros(2), 1.0), 1)),
    ]
    for s, t in pairs:
        assert repr(s.support).replace("shardflow.", "torch.") == repr(t.support)
        assert s.support.event_dim == t.support.event_dim
        assert s.support.is_discrete == t.support.is_discrete
        assert {k: repr(v) for k, v in s.arg_constraints.items()} == {
            k: repr(v).replace("torch.", "shardflow.") for k, v in t.arg_constraints.items()}
        assert repr(s).replace("shardflow.", "torch.") == repr(t)


def test_constraints_check_like_torch():
    C, TC = D.constraints, torch.distributions.constraints
    x = np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])
    for name in ("real", "positive", "nonnegative", "unit_interval", "simplex", "boolean",
                 "real_vector", "nonnegative_integer"):
        got = getattr(C, name).check(shardflow.tensor(x)).numpy()
        want = getattr(TC, name).check(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    m = np.array([[[2.0, 0.0], [0.5, 1.0]], [[1.0, 0.3], [0.3, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    for name in ("lower_cholesky", "lower_triangular", "positive_definite", "symmetric", "square",
                 "positive_semidefinite"):
        got = getattr(C, name).check(shardflow.tensor(m)).numpy()
        want = getattr(TC, name).check(torch.tensor(m)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    for c, tc in ((C.interval(0.0, 0.6), TC.interval(0.0, 0.6)),
                  (C.greater_than(0.3), TC.greater_than(0.3)),
                  (C.integer_interval(0, 1), TC.integer_interval(0, 1)),
                  (C.independent(C.positive, 1), TC.independent(TC.positive, 1))):
        np.testing.assert_array_equal(c.check(shardflow.tensor(x)).numpy(), tc.check(torch.tensor(x)).numpy())
        assert repr(c) == repr(tc)
