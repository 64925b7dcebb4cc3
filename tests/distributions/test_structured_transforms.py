"""The structured transforms (``transforms_structured.py``) against torch's: forward values,
inverse (round trip), log|det J| and its gradient, forward/inverse shapes, domain and
codomain event dims, and the errors for bad shapes."""

import numpy as np
import pytest
import torch

import shardflow

RNG = np.random.default_rng(0)


def _corr_cholesky_input(shape):
    return RNG.standard_normal(shape)


# (name, factory(T) -> transform, input array in the domain, has an exact inverse)
CASES = [
    ("softmax", lambda T: T.SoftmaxTransform(), RNG.standard_normal((2, 4)), False),
    ("stick_breaking", lambda T: T.StickBreakingTransform(), RNG.standard_normal((3, 2, 4)), True),
    ("reshape", lambda T: T.ReshapeTransform((6,), (2, 3)), RNG.standard_normal((4, 6)), True),
    ("lower_cholesky", lambda T: T.LowerCholeskyTransform(), RNG.standard_normal((2, 3, 3)), False),
    ("positive_definite", lambda T: T.PositiveDefiniteTransform(), RNG.standard_normal((2, 3, 3)), False),
    ("corr_cholesky", lambda T: T.CorrCholeskyTransform(), _corr_cholesky_input((2, 6)), True),
    ("cat", lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, -2.0), T.SigmoidTransform()],
                                     dim=-1, lengths=[2, 1, 2]), RNG.standard_normal((3, 5)), True),
    ("cat_dim0", lambda T: T.CatTransform([T.ExpTransform(), T.TanhTransform()], dim=0, lengths=[1, 2]),
     RNG.standard_normal((3, 4)), True),
    ("stack", lambda T: T.StackTransform([T.ExpTransform(), T.SoftplusTransform(), T.AffineTransform(0.5, 3.0)], dim=1),
     RNG.standard_normal((2, 3)), True),
]

# not bijective: torch defines no log_abs_det_jacobian for these
NO_LADJ = {"softmax", "lower_cholesky", "positive_definite"}


@pytest.mark.parametrize("name,make,x,exact_inverse", CASES, ids=[c[0] for c in CASES])
def test_transform_matches_torch(name, make, x, exact_inverse):
    st = make(shardflow.distributions.transforms)
    tt = make(torch.distributions.transforms)
    xs = shardflow.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ys, yt = st(xs), tt(xt)
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert tuple(st.forward_shape(tuple(x.shape))) == tuple(tt.forward_shape(torch.Size(x.shape)))
    assert tuple(st.inverse_shape(tuple(yt.shape))) == tuple(tt.inverse_shape(yt.shape))
    assert st.domain.event_dim == tt.domain.event_dim and st.codomain.event_dim == tt.codomain.event_dim
    assert st.bijective == tt.bijective
    back_s = st.inv(shardflow.tensor(yt.detach().numpy()))
    back_t = tt.inv(yt.detach())
    np.testing.assert_allclose(back_s.numpy(), back_t.numpy(), rtol=1e-9, atol=1e-9)
    if exact_inverse:
        np.testing.assert_allclose(back_s.numpy(), x, rtol=1e-8, atol=1e-8)
    assert bool(st.codomain.check(ys.detach()).all())
    if name in NO_LADJ:
        return
    ls, lt = st.log_abs_det_jacobian(xs, ys), tt.log_abs_det_jacobian(xt, yt)
    assert tuple(ls.shape) == tuple(lt.shape)
    np.testing.assert_allclose(ls.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-10)
    w = RNG.standard_normal(tuple(lt.shape))
    ((ls * shardflow.tensor(w)).sum() + ys.sum()).backward()
    ((lt * torch.tensor(w)).sum() + yt.sum()).backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_cumulative_distribution_transform_matches_torch():
    x = np.array([-1.0, 0.2, 1.5])
    for lib in (shardflow, torch):
        d = lib.distributions.Normal(lib.tensor([0.1, -0.3, 0.5]), lib.tensor([1.0, 2.0, 0.5]))
        t = lib.distributions.transforms.CumulativeDistributionTransform(d)
        xv = lib.tensor(x)
        y = t(xv)
        out = (y.numpy(), t.inv(y).numpy(), t.log_abs_det_jacobian(xv, y).numpy())
        if lib is shardflow:
            sf_out = out
    for a, b in zip(sf_out, out):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # a Normal pushed through its own cdf is uniform: log_prob 0 on (0, 1)
    d = shardflow.distributions.Normal(0.0, 1.0)
    u = shardflow.distributions.TransformedDistribution(d, [shardflow.distributions.transforms.CumulativeDistributionTransform(d)])
    np.testing.assert_allclose(u.log_prob(shardflow.tensor([0.1, 0.5, 0.9])).numpy(), 0.0, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda T, m: T.ReshapeTransform((2, 3), (5,)),
    lambda T, m: T.ReshapeTransform((6,), (2, 3)).forward_shape((4, 5)),
    lambda T, m: T.StickBreakingTransform().forward_shape(()),
    lambda T, m: T.CorrCholeskyTransform().forward_shape((4,)),
    lambda T, m: T.CorrCholeskyTransform().inverse_shape((3, 4)),
    lambda T, m: T.CatTransform([T.ExpTransform()], dim=0, lengths=[2])(m.ones(3)),
    lambda T, m: T.StackTransform([T.ExpTransform()], dim=0)(m.ones(3)),
], ids=["reshape_numel", "reshape_shape", "stick_too_few", "corr_not_triangular", "corr_not_square",
        "cat_length", "stack_length"])
def test_shape_errors_match_torch(call):
    def message(lib):
        with pytest.raises(Exception) as info:
            call(lib.distributions.transforms, lib)
        return type(info.value), str(info.value).replace("shardflow.", "torch.")
    assert message(shardflow) == message(torch)


def test_transforms_are_exported_as_torch():
    for name in ("CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
                 "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
                 "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "identity_transform"):
        assert hasattr(shardflow.distributions, name) and hasattr(shardflow.distributions.transforms, name)
    assert shardflow.distributions.transforms.StickBreakingTransform() == shardflow.distributions.transforms.StickBreakingTransform()
