"""Every distribution's log_prob, entropy, mean, variance, stddev, cdf, icdf and every
registered KL pair, against torch.distributions on the same parameters: forward values,
result dtypes, and the gradients of a random weighting of the result with respect to every
parameter, in float32 and float64 (tests/distributions/_cases.py builds both)."""

import numpy as np
import pytest
import torch

import shardflow

from ._cases import BY_NAME, CASES, KL_PAIRS, build

DTYPES = ("float32", "float64")


def _tol(case, dtype):
    return (case.tol, case.tol) if dtype == "float32" else (case.tol * 1e-5, case.tol * 1e-5)


def _outputs(case, dist, lib, rng, dtype):
    """{method: output tensor} for every method the case compares."""
    out = {}
    for method in case.methods:
        if method in ("log_prob", "cdf"):
            v = case.value(np.random.default_rng(7)).astype(dtype)
            value = lib.tensor(v)
            out[method] = getattr(dist, method)(value)
        elif method == "entropy":
            out[method] = dist.entropy()
        else:
            out[method] = getattr(dist, method)
    if case.quantiles:
        q = lib.tensor(np.array([0.05, 0.3, 0.7], dtype=dtype)).reshape(3, *([1] * len(dist.batch_shape)))
        out["icdf"] = dist.icdf(q)
    return out


def _compare(case, dtype, sf_out, th_out, sf_params, th_params):
    atol, rtol = _tol(case, dtype)
    rng = np.random.default_rng(3)
    sf_loss, th_loss = 0, 0
    for key, t in th_out.items():
        s = sf_out[key]
        assert tuple(s.shape) == tuple(t.shape), f"{case.name}.{key}: shape {tuple(s.shape)} vs {tuple(t.shape)}"
        assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{case.name}.{key}: dtype {s.dtype} vs {t.dtype}"
        np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol,
                                   err_msg=f"{case.name}.{key} [{dtype}]")
        if t.requires_grad:
            w = rng.standard_normal(tuple(t.shape)).astype(dtype)
            sf_loss = sf_loss + (s * shardflow.tensor(w)).sum()
            th_loss = th_loss + (t * torch.tensor(w)).sum()
    if isinstance(th_loss, int):
        return
    sf_loss.backward()
    th_loss.backward()
    for k, (sp, tp) in enumerate(zip(sf_params, th_params)):
        if tp.grad is None:
            assert sp.grad is None or not np.any(sp.grad.numpy()), f"{case.name}: param {k} got a gradient, torch's did not"
            continue
        assert sp.grad is not None, f"{case.name}: param {k} got no gradient"
        np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), atol=atol * 10, rtol=rtol * 10,
                                   err_msg=f"{case.name}: gradient of param {k} [{dtype}]")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_methods_match_torch(case, dtype):
    rng = np.random.default_rng(0)
    arrays = [p.make(rng) for p in case.params]
    sf_dist, sf_params = build(case, shardflow, arrays, dtype)
    th_dist, th_params = build(case, torch, arrays, dtype)
    assert tuple(sf_dist.batch_shape) == tuple(th_dist.batch_shape)
    assert tuple(sf_dist.event_shape) == tuple(th_dist.event_shape)
    assert sf_dist.has_rsample == th_dist.has_rsample
    sf_out = _outputs(case, sf_dist, shardflow, rng, dtype)
    th_out = _outputs(case, th_dist, torch, rng, dtype)
    _compare(case, dtype, sf_out, th_out, sf_params, th_params)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pair", KL_PAIRS, ids=[f"{p}-{q}" for p, q in KL_PAIRS])
def test_kl_divergence_matches_torch(pair, dtype):
    cp, cq = BY_NAME[pair[0]], BY_NAME[pair[1]]
    rng = np.random.default_rng(1)
    ap = [p.make(rng) for p in cp.params]
    aq = [p.make(rng) for p in cq.params]
    sp, sfp = build(cp, shardflow, ap, dtype)
    sq, sfq = build(cq, shardflow, aq, dtype)
    tp, thp = build(cp, torch, ap, dtype)
    tq, thq = build(cq, torch, aq, dtype)
    s = shardflow.distributions.kl_divergence(sp, sq)
    t = torch.distributions.kl_divergence(tp, tq)
    case = cp if cp.tol >= cq.tol else cq
    _compare(case, dtype, {"kl": s}, {"kl": t}, sfp + sfq, thp + thq)


def test_kl_dispatch_prefers_the_most_specific_pair_and_memo_is_cleared():
    D = shardflow.distributions

    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    base = D.kl_divergence(p, q)
    np.testing.assert_allclose(base.numpy(), torch.distributions.kl_divergence(
        torch.distributions.Normal(0.0, 1.0), torch.distributions.Normal(1.0, 2.0)).numpy(), rtol=1e-6)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return shardflow.tensor(42.0)

    try:
        assert D.kl_divergence(p, q).item() == 42.0  # the more specific pair, memo cleared
        assert D.kl_divergence(D.Normal(0.0, 1.0), q).item() == pytest.approx(base.item())
    finally:
        del D.kl._KL_REGISTRY[MyNormal, D.Normal]
        D.kl._KL_MEMOIZE.clear()


def test_kl_without_a_registered_pair_names_both_types():
    D = shardflow.distributions
    with pytest.raises(NotImplementedError, match="p type Categorical and q type Normal"):
        D.kl_divergence(D.Categorical(probs=shardflow.tensor([0.5, 0.5])), D.Normal(0.0, 1.0))
    with pytest.raises(TypeError, match="Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_enumerate_support_and_mode_match_torch():
    for name in ("categorical_probs", "bernoulli_probs", "one_hot_categorical", "dirichlet", "gamma", "beta"):
        case = BY_NAME[name]
        arrays = [p.make(np.random.default_rng(5)) for p in case.params]
        s, _ = build(case, shardflow, arrays, "float64")
        t, _ = build(case, torch, arrays, "float64")
        np.testing.assert_allclose(s.mode.detach().numpy(), t.mode.detach().numpy(), rtol=1e-12, err_msg=name)
        if t.has_enumerate_support:
            for expand in (True, False):
                np.testing.assert_array_equal(s.enumerate_support(expand).numpy(),
                                              t.enumerate_support(expand).numpy())


def test_expand_matches_torch():
    for name in ("normal", "categorical_probs", "mvn_covariance", "beta", "independent_normal", "lognormal"):
        case = BY_NAME[name]
        arrays = [p.make(np.random.default_rng(6)) for p in case.params]
        s, _ = build(case, shardflow, arrays, "float64")
        t, _ = build(case, torch, arrays, "float64")
        new_batch = (4,) + tuple(t.batch_shape)
        se, te = s.expand(new_batch), t.expand(new_batch)
        assert tuple(se.batch_shape) == tuple(te.batch_shape) and tuple(se.event_shape) == tuple(te.event_shape)
        one = tuple(t.batch_shape) + tuple(t.event_shape)
        v = case.value(np.random.default_rng(2)).reshape((-1,) + one)[0]  # one point per batch entry
        v = np.broadcast_to(v, new_batch + tuple(t.event_shape)).copy()
        np.testing.assert_allclose(se.log_prob(shardflow.tensor(v)).detach().numpy(),
                                   te.log_prob(torch.tensor(v)).detach().numpy(), rtol=1e-9, err_msg=name)
        assert tuple(se.sample((2,)).shape) == tuple(te.sample((2,)).shape)
