"""``nn.utils.parametrize``, ``nn.utils.parametrizations.weight_norm/spectral_norm`` and the
legacy ``nn.utils.weight_norm/spectral_norm`` hooks, against torch 2.13: forward values,
gradients, state_dict keys, power-iteration buffers, removal."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

P = sf.nn.utils.parametrize


def _sf_state(tm):
    return {k: sf.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}


def _same_module(tm, sm):
    """Give ``sm`` torch module ``tm``'s state (same keys required: strict load)."""
    assert list(sm.state_dict()) == list(tm.state_dict())
    sm.load_state_dict(_sf_state(tm))


def _close(a, b, tol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else a
    b = b.detach().numpy() if hasattr(b, "detach") else b
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _pair(kind):
    torch.manual_seed(0)
    if kind == "linear":
        tm, sm, x = torch.nn.Linear(4, 3), sf.nn.Linear(4, 3), np.random.RandomState(0).randn(5, 4)
    elif kind == "conv1d":
        tm, sm, x = torch.nn.Conv1d(2, 3, 3), sf.nn.Conv1d(2, 3, 3), np.random.RandomState(0).randn(2, 2, 7)
    elif kind == "conv2d":
        tm, sm, x = torch.nn.Conv2d(2, 3, 3), sf.nn.Conv2d(2, 3, 3), np.random.RandomState(0).randn(2, 2, 5, 5)
    else:
        tm, sm = torch.nn.ConvTranspose1d(3, 2, 3), sf.nn.ConvTranspose1d(3, 2, 3)
        x = np.random.RandomState(0).randn(2, 3, 6)
    _same_module(tm, sm)
    x = x.astype(np.float32)
    return tm, sm, torch.tensor(x), sf.tensor(x)


class Symmetric(sf.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class TSymmetric(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


# ---------------------------------------------------------------- parametrize
def test_register_parametrization_like_torch():
    tm, sm = torch.nn.Linear(4, 4), sf.nn.Linear(4, 4)
    _same_module(tm, sm)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSymmetric())
    P.register_parametrization(sm, "weight", Symmetric())
    assert type(sm).__name__ == "ParametrizedLinear" == type(tm).__name__
    assert isinstance(sm, sf.nn.Linear)
    assert P.is_parametrized(sm) and P.is_parametrized(sm, "weight") and not P.is_parametrized(sm, "bias")
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _close(sm.weight, tm.weight)
    w = sm.weight.numpy()
    assert np.array_equal(w, w.T)  # the parametrization is applied
    x = np.random.RandomState(1).randn(3, 4).astype(np.float32)
    tm(torch.tensor(x)).pow(2).sum().backward()
    sm(sf.tensor(x)).pow(2).sum().backward()
    _close(sm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)
    _close(sm.bias.grad, tm.bias.grad)


def test_assignment_goes_through_right_inverse_in_place():
    sm = sf.nn.Linear(3, 3)
    P.register_parametrization(sm, "weight", Symmetric())
    original = sm.parametrizations.weight.original
    a = np.arange(9, dtype=np.float32).reshape(3, 3)
    sm.weight = sf.tensor(a + a.T)
    assert sm.parametrizations.weight.original is original  # the optimizer's object is kept
    np.testing.assert_array_equal(original.numpy(), np.triu(a + a.T))
    np.testing.assert_array_equal(sm.weight.numpy(), a + a.T)


def test_chained_parametrizations_and_shape_check():
    class Double(sf.nn.Module):
        def forward(self, x):
            return 2 * x

    class Widen(sf.nn.Module):
        def forward(self, x):
            return sf.cat([x, x], 0)

    sm = sf.nn.Linear(3, 3)
    w0 = sm.weight.numpy().copy()
    P.register_parametrization(sm, "weight", Symmetric())
    P.register_parametrization(sm, "weight", Double())
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(sm.weight.numpy(), 2 * sym, rtol=1e-6)
    assert len(sm.parametrizations.weight) == 2
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(sm, "weight", Widen())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(sm, "nothing", Double())


def test_cached_computes_once():
    calls = []

    class Count(sf.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 1.0

    sm = sf.nn.Linear(2, 2)
    P.register_parametrization(sm, "weight", Count())
    calls.clear()
    with P.cached():
        a, b = sm.weight, sm.weight
        assert a is b
    assert len(calls) == 1
    sm.weight  # noqa: B018
    assert len(calls) == 2


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_like_torch(leave):
    tm, sm = torch.nn.Linear(3, 3), sf.nn.Linear(3, 3)
    _same_module(tm, sm)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSymmetric())
    P.register_parametrization(sm, "weight", Symmetric())
    original = sm.parametrizations.weight.original
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=leave)
    P.remove_parametrizations(sm, "weight", leave_parametrized=leave)
    assert type(sm) is sf.nn.Linear and not hasattr(sm, "parametrizations")
    assert sm.weight is original and isinstance(sm.weight, sf.nn.Parameter)
    assert list(sm.state_dict()) == list(tm.state_dict())
    _close(sm.weight, tm.weight)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(sm, "weight")


def test_parametrized_module_copies_and_refuses_pickle():
    sm = sf.nn.Linear(3, 3)
    P.register_parametrization(sm, "weight", Symmetric())
    c = copy.deepcopy(sm)
    np.testing.assert_array_equal(c.weight.numpy(), sm.weight.numpy())
    P.remove_parametrizations(c, "weight")
    assert P.is_parametrized(sm, "weight") and type(sm).__name__ == "ParametrizedLinear"
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(sm)
    assert P.type_before_parametrizations(sm) is sf.nn.Linear


# ---------------------------------------------------------------- parametrizations.weight_norm
@pytest.mark.parametrize("kind, dim", [("linear", 0), ("conv1d", 0), ("conv2d", 1), ("conv1d", None),
                                       ("conv2d", -1), ("convT", 0)])
def test_weight_norm_parametrization_matches_torch(kind, dim):
    tm, sm, tx, sx = _pair(kind)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    sf.nn.utils.parametrizations.weight_norm(sm, dim=dim)
    keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert list(sm.state_dict()) == list(tm.state_dict()) == keys
    for k in keys:
        _close(sm.state_dict()[k], tm.state_dict()[k])
    _close(sm.weight, tm.weight)
    ty, sy = tm(tx), sm(sx)
    _close(sy, ty)
    (ty ** 2).sum().backward()
    (sy ** 2).sum().backward()
    for (n, tp), (m, sp) in zip(tm.named_parameters(), sm.named_parameters(), strict=True):
        assert n == m
        _close(sp.grad, tp.grad, 1e-4)


def test_weight_norm_loads_a_legacy_state_dict():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 3, 3))
    sm = sf.nn.utils.parametrizations.weight_norm(sf.nn.Conv1d(2, 3, 3))
    sm.load_state_dict(_sf_state(legacy))  # weight_g / weight_v renamed by the pre-hook
    _close(sm.parametrizations.weight.original0, legacy.weight_g)
    _close(sm.weight, legacy.weight)


# ---------------------------------------------------------------- parametrizations.spectral_norm
@pytest.mark.parametrize("kind, iters", [("linear", 1), ("conv2d", 2), ("convT", 1)])
def test_spectral_norm_parametrization_matches_torch(kind, iters):
    tm, sm, tx, sx = _pair(kind)
    torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=iters)
    sf.nn.utils.parametrizations.spectral_norm(sm, n_power_iterations=iters)
    keys = ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
            "parametrizations.weight.0._v"]
    assert list(sm.state_dict()) == list(tm.state_dict()) == keys
    h = tm.weight.shape[1 if kind == "convT" else 0]
    assert sm.parametrizations.weight[0]._u.shape == (h,)
    assert abs(float(sm.parametrizations.weight[0]._u.norm()) - 1) < 1e-5
    sm.load_state_dict(_sf_state(tm))  # torch's random u, v
    for step in range(2):  # training: u, v advance by the same power iterations
        ty, sy = tm(tx), sm(sx)
        _close(sy, ty, 1e-4)
        _close(sm.parametrizations.weight[0]._u, tm.parametrizations.weight[0]._u, 1e-4)
        _close(sm.parametrizations.weight[0]._v, tm.parametrizations.weight[0]._v, 1e-4)
    (ty ** 2).sum().backward()
    (sy ** 2).sum().backward()
    _close(sm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad, 1e-4)
    tm.eval()
    sm.eval()
    u = sm.parametrizations.weight[0]._u.numpy().copy()
    _close(sm(sx), tm(tx), 1e-4)
    np.testing.assert_array_equal(sm.parametrizations.weight[0]._u.numpy(), u)  # eval: no update


def test_spectral_norm_parametrization_sigma_is_the_top_singular_value():
    sm = sf.nn.Linear(6, 4)
    sf.nn.utils.parametrizations.spectral_norm(sm)
    w = sm.parametrizations.weight.original.numpy()
    for _ in range(30):
        sm.weight  # noqa: B018  (each access in training mode is one power iteration)
    s = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(sm.weight.numpy(), w / s, rtol=1e-4)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        sf.nn.utils.parametrizations.spectral_norm(sf.nn.Linear(2, 2), n_power_iterations=0)


# ---------------------------------------------------------------- legacy hooks
@pytest.mark.parametrize("kind, dim", [("linear", 0), ("conv1d", 0), ("conv2d", None), ("conv2d", 2)])
def test_legacy_weight_norm_matches_torch(kind, dim):
    tm, sm, tx, sx = _pair(kind)
    with pytest.warns(FutureWarning, match="deprecated"):
        sf.nn.utils.weight_norm(sm, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(tm, dim=dim)
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    _close(sm.weight_g, tm.weight_g)
    ty, sy = tm(tx), sm(sx)
    _close(sy, ty)
    (ty ** 2).sum().backward()
    (sy ** 2).sum().backward()
    _close(sm.weight_g.grad, tm.weight_g.grad, 1e-4)
    _close(sm.weight_v.grad, tm.weight_v.grad, 1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            pytest.warns(FutureWarning):
        sf.nn.utils.weight_norm(sm, dim=dim)
    torch.nn.utils.remove_weight_norm(tm)
    sf.nn.utils.remove_weight_norm(sm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert not sm._forward_pre_hooks
    _close(sm.weight, tm.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        sf.nn.utils.remove_weight_norm(sm)


@pytest.mark.parametrize("kind", ["linear", "conv2d", "convT"])
def test_legacy_spectral_norm_matches_torch(kind):
    tm, sm, tx, sx = _pair(kind)
    torch.nn.utils.spectral_norm(tm)
    sf.nn.utils.spectral_norm(sm)
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    sm.load_state_dict(_sf_state(tm))
    for _ in range(2):
        ty, sy = tm(tx), sm(sx)
        _close(sy, ty, 1e-4)
        _close(sm.weight_u, tm.weight_u, 1e-4)
        _close(sm.weight_v, tm.weight_v, 1e-4)
    (ty ** 2).sum().backward()
    (sy ** 2).sum().backward()
    _close(sm.weight_orig.grad, tm.weight_orig.grad, 1e-4)
    tm.eval()
    sm.eval()
    v = sm.weight_v.numpy().copy()
    _close(sm(sx), tm(tx), 1e-4)
    np.testing.assert_array_equal(sm.weight_v.numpy(), v)
    torch.nn.utils.remove_spectral_norm(tm)
    sf.nn.utils.remove_spectral_norm(sm)
    assert list(sm.state_dict()) == list(tm.state_dict())
    _close(sm.weight, tm.weight, 1e-4)


# ---------------------------------------------------------------- a GAN-style training run
def _disc(lib, legacy):
    nn, U = lib.nn, lib.nn.utils
    conv1, conv2, fc = nn.Conv1d(2, 4, 3), nn.Conv1d(4, 4, 3), nn.Linear(8, 1)
    if legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conv1, conv2, fc = U.weight_norm(conv1), U.spectral_norm(conv2), U.spectral_norm(fc)
    else:
        P_ = U.parametrizations
        conv1, conv2, fc = P_.weight_norm(conv1), P_.spectral_norm(conv2), P_.spectral_norm(fc)
    return nn.Sequential(conv1, nn.LeakyReLU(0.2), conv2, nn.LeakyReLU(0.2), nn.Flatten(), fc)


@pytest.mark.parametrize("legacy", [False, True])
def test_spectral_and_weight_norm_training_steps_match_torch(legacy):
    torch.manual_seed(0)
    td, sd = _disc(torch, legacy), _disc(sf, legacy)
    sd.load_state_dict(_sf_state(td))
    topt = torch.optim.SGD(td.parameters(), lr=0.05, momentum=0.9)
    sopt = sf.optim.SGD(sd.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 2, 6)).astype(np.float32)
        tl = torch.nn.functional.softplus(-td(torch.tensor(x))).mean()
        sl = sf.nn.functional.softplus(-sd(sf.tensor(x))).mean()
        np.testing.assert_allclose(sl.item(), tl.item(), rtol=1e-4)
        topt.zero_grad()
        sopt.zero_grad()
        tl.backward()
        sl.backward()
        topt.step()
        sopt.step()
    for (k, tv), (m, sv) in zip(td.state_dict().items(), sd.state_dict().items(), strict=True):
        assert k == m
        np.testing.assert_allclose(sv.numpy(), tv.numpy(), rtol=1e-3, atol=1e-5, err_msg=k)
    if not legacy:  # fold the parametrizations away, as before export
        for tm, sm in ((td[0], sd[0]), (td[2], sd[2])):
            torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
            P.remove_parametrizations(sm, "weight")
            _close(sm.weight, tm.weight, 1e-4)


def test_legacy_weight_norm_warning_is_shown_once_per_process_as_torch():
    """torch's ``nn.utils.weight_norm`` FutureWarning is attributed to a line inside torch
    (its ``@deprecated`` ``WeightNorm.apply``), so Python's default filter shows it once
    however many lines call it; shardflow's was attributed to each caller's line (a MelGAN
    or TCN program printed it once per ``weight_norm(...)`` line)."""
    shown = {}
    for lib in (torch, sf):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 3, 3))
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 3))
            for _ in range(2):
                lib.nn.utils.weight_norm(lib.nn.ConvTranspose1d(2, 3, 4))
        shown[lib] = [(w.category, w.filename.rsplit("/", 1)[-1]) for w in caught]
    assert shown[sf] == shown[torch] == [(FutureWarning, "weight_norm.py")]
