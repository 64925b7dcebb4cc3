"""``biject_to`` / ``transform_to`` against torch's registry: for each constraint, the
transform's type, its values and log|det J| (and gradient) on random unconstrained input,
that the output satisfies the constraint, the inverse round trip of ``biject_to``, the
supports of distributions, and the registry's errors."""

import numpy as np
import pytest
import torch

import shardflow

RNG = np.random.default_rng(0)

# (name, constraint factory (C, lib), unconstrained input shape)
CONSTRAINTS = [
    ("real", lambda C, m: C.real, (3,)),
    ("real_vector", lambda C, m: C.real_vector, (2, 3)),
    ("positive", lambda C, m: C.positive, (3,)),
    ("nonnegative", lambda C, m: C.nonnegative, (3,)),
    ("greater_than", lambda C, m: C.greater_than(m.tensor([-1.0, 0.5, 2.0], dtype=m.float64)), (3,)),
    ("greater_than_eq", lambda C, m: C.greater_than_eq(1.5), (3,)),
    ("less_than", lambda C, m: C.less_than(2.0), (3,)),
    ("unit_interval", lambda C, m: C.unit_interval, (3,)),
    ("interval", lambda C, m: C.interval(-2.0, 3.0), (3,)),
    ("half_open_interval", lambda C, m: C.half_open_interval(m.tensor([0.0, 1.0, -1.0], dtype=m.float64), 4.0), (3,)),
    ("simplex", lambda C, m: C.simplex, (2, 4)),
    ("lower_cholesky", lambda C, m: C.lower_cholesky, (2, 3, 3)),
    ("positive_definite", lambda C, m: C.positive_definite, (3, 3)),
    ("corr_cholesky", lambda C, m: C.corr_cholesky, (2, 3)),
    ("independent_positive", lambda C, m: C.independent(C.positive, 1), (2, 3)),
    ("cat", lambda C, m: C.cat([C.positive, C.interval(0.0, 2.0)], dim=-1, lengths=[2, 1]), (2, 3)),
    ("stack", lambda C, m: C.stack([C.positive, C.real, C.unit_interval], dim=0), (3, 2)),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,make,shape", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_registry_matches_torch(registry, name, make, shape):
    sc = make(shardflow.distributions.constraints, shardflow)
    tc = make(torch.distributions.constraints, torch)
    try:
        tt = getattr(torch.distributions, registry)(tc)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=str(e)):
            getattr(shardflow.distributions, registry)(sc)
        return
    st = getattr(shardflow.distributions, registry)(sc)
    assert type(st).__name__ == type(tt).__name__
    x = RNG.standard_normal(shape)
    xs, xt = shardflow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys, yt = st(xs), tt(xt)
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert bool(sc.check(ys.detach()).all())
    if registry == "biject_to" or name in ("real", "positive", "interval", "corr_cholesky"):
        np.testing.assert_allclose(st.inv(ys.detach()).numpy(), x, rtol=1e-8, atol=1e-8)
    if st.bijective:
        ls, lt = st.log_abs_det_jacobian(xs, ys), tt.log_abs_det_jacobian(xt, yt)
        np.testing.assert_allclose(ls.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-10)
        (ls.sum() + ys.sum()).backward()
        (lt.sum() + yt.sum()).backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_biject_to_the_support_of_distributions():
    """The usual pattern: an unconstrained parameter mapped onto a distribution's support."""
    for make in (lambda m: m.distributions.Pareto(m.tensor([1.5]), m.tensor([2.0])),
                 lambda m: m.distributions.Beta(m.tensor([1.5]), m.tensor([2.0])),
                 lambda m: m.distributions.Dirichlet(m.tensor([1.5, 2.0, 0.5])),
                 lambda m: m.distributions.Uniform(m.tensor([-1.0]), m.tensor([2.0])),
                 lambda m: m.distributions.Gamma(m.tensor([1.5]), m.tensor([2.0]))):
        s, t = make(shardflow), make(torch)
        x = RNG.standard_normal((4,) + tuple(t.batch_shape) + tuple(t.event_shape[:-1]) + ((t.event_shape[-1] - 1,) if t.event_shape else ()))
        ys = shardflow.distributions.biject_to(s.support)(shardflow.tensor(x, dtype=shardflow.float32))
        yt = torch.distributions.biject_to(t.support)(torch.tensor(x, dtype=torch.float32))
        np.testing.assert_allclose(ys.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s.log_prob(ys).numpy(), t.log_prob(yt).numpy(), rtol=1e-5, atol=1e-5)


def test_registry_errors_and_registration():
    D = shardflow.distributions
    with pytest.raises(NotImplementedError, match="Cannot transform _IntegerGreaterThan constraints"):
        D.biject_to(D.constraints.nonnegative_integer)
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        D.biject_to(D.constraints.lower_cholesky)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        D.constraint_registry.ConstraintRegistry().register(int, lambda c: None)

    class _Odd(D.constraints.Constraint):
        def check(self, value):
            return value % 2 == 1

    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(_Odd())
    def _to_odd(constraint):
        return D.transforms.AffineTransform(1.0, 2.0)

    assert isinstance(registry(_Odd()), D.transforms.AffineTransform)
