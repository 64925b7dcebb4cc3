"""The optimizers added for torch compatibility (NAdam, RAdam, Adamax, Rprop, ASGD, Adafactor,
SparseAdam) against torch 2.13: parameters over several steps, state_dict keys and values,
a round trip through state_dict, and the argument errors."""

import copy

import numpy as np
import pytest
import torch

import shardflow
from shardflow import optim

# a matrix, a vector, a 3-d tensor (Adafactor factors over the last two dims) and a scalar
SHAPES = [(4, 3), (5,), (2, 3, 2), ()]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    arrs = [np.asarray(rng.standard_normal(s), dtype=np.float32) for s in SHAPES]
    return ([shardflow.tensor(a, requires_grad=True) for a in arrs],
            [torch.tensor(a, requires_grad=True) for a in arrs])


def _set_grads(sf, th, rng):
    for s, t in zip(sf, th):
        g = np.asarray(rng.standard_normal(tuple(t.shape)), dtype=np.float32)
        s.grad = shardflow.tensor(g)
        t.grad = torch.tensor(g)


def _run(name, kw, steps=12, groups=False):
    sf, th = _params()
    if groups:
        sf = [{"params": sf[:2]}, {"params": sf[2:], "lr": 0.003}]
        th = [{"params": th[:2]}, {"params": th[2:], "lr": 0.003}]
    o_sf, o_th = getattr(optim, name)(sf, **kw), getattr(torch.optim, name)(th, **kw)
    rng = np.random.default_rng(1)
    ps_sf = [p for g in o_sf.param_groups for p in g["params"]]
    ps_th = [p for g in o_th.param_groups for p in g["params"]]
    for i in range(steps):
        _set_grads(ps_sf, ps_th, rng)
        o_sf.step()
        o_th.step()
        for s, t in zip(ps_sf, ps_th):
            np.testing.assert_allclose(s.numpy(), t.detach().numpy(), rtol=2e-5, atol=2e-6,
                                       err_msg=f"{name} {kw} step {i}")
    return o_sf, o_th, ps_sf


CASES = [
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),  # rho_t > 5 from step 6 on: both branches run
    ("RAdam", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.7, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=4, weight_decay=0.1, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.5, d=1.0, maximize=True)),  # rho_t = 1 / sqrt(t) from step 5
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(k) or 'defaults'}" for n, k in CASES])
def test_optimizer_matches_torch_over_steps(name, kw):
    _run(name, kw)


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Rprop", "ASGD", "Adafactor"])
def test_param_groups_match_torch(name):
    o_sf, o_th, _ = _run(name, {}, steps=4, groups=True)
    assert o_sf.param_groups[1]["lr"] == 0.003
    for a, b in zip(o_sf.state_dict()["param_groups"], o_th.state_dict()["param_groups"]):
        assert a == b  # every option, default and index, as torch


def _np(v):
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float64)


@pytest.mark.parametrize("name,kw", [("NAdam", {}), ("RAdam", {}), ("Adamax", {}), ("Rprop", {}),
                                     ("ASGD", dict(t0=3)), ("Adafactor", {})])
def test_state_dict_matches_torch_and_resumes(name, kw):
    o_sf, o_th, ps = _run(name, kw, steps=7)
    sd, tsd = o_sf.state_dict(), o_th.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for k in sd["state"]:
        assert list(sd["state"][k]) == list(tsd["state"][k])  # names and order
        for key, v in sd["state"][k].items():
            assert tuple(v.shape) == tuple(tsd["state"][k][key].shape), key
            np.testing.assert_allclose(_np(v), _np(tsd["state"][k][key]), rtol=1e-4, atol=1e-6,
                                       err_msg=key)
    # torch's own state_dict, converted, loads into shardflow and continues like torch
    converted = copy.deepcopy(tsd)
    for st in converted["state"].values():
        for key, v in st.items():
            st[key] = shardflow.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
    for source in (copy.deepcopy(sd), converted):
        clones = [shardflow.tensor(p.numpy().copy(), requires_grad=True) for p in ps]
        o2 = getattr(optim, name)(clones, **kw)
        o2.load_state_dict(source)
        ref = [shardflow.tensor(p.numpy().copy(), requires_grad=True) for p in ps]
        o1 = getattr(optim, name)(ref, **kw)
        o1.load_state_dict(copy.deepcopy(sd))
        rng = np.random.default_rng(9)
        for _ in range(3):
            for a, b in zip(ref, clones):
                g = np.asarray(rng.standard_normal(tuple(a.shape)), dtype=np.float32)
                a.grad, b.grad = shardflow.tensor(g), shardflow.tensor(g.copy())
            o1.step()
            o2.step()
        for a, b in zip(ref, clones):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def _sparse_grad_pair(rng, shape):
    rows = np.array([1, 3, 1, 0])  # row 1 twice: coalescing sums it
    vals = np.asarray(rng.standard_normal((len(rows), shape[1])), dtype=np.float32)
    th = torch.sparse_coo_tensor(torch.tensor(rows[None]), torch.tensor(vals), shape)
    sf = shardflow.sparse_coo_tensor(shardflow.tensor(rows[None]), shardflow.tensor(vals), shape)
    return sf, th


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_matches_torch_on_sparse_gradients(maximize):
    rng = np.random.default_rng(0)
    w = np.asarray(rng.standard_normal((5, 3)), dtype=np.float32)
    p_sf, p_th = shardflow.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    o_sf = optim.SparseAdam([p_sf], lr=0.01, maximize=maximize)
    o_th = torch.optim.SparseAdam([p_th], lr=0.01, maximize=maximize)
    for i in range(6):
        p_sf.grad, p_th.grad = _sparse_grad_pair(rng, (5, 3))
        o_sf.step()
        o_th.step()
        np.testing.assert_allclose(p_sf.numpy(), p_th.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"step {i}")
    np.testing.assert_array_equal(p_sf.numpy()[[2, 4]], w[[2, 4]])  # rows never touched
    sd, tsd = o_sf.state_dict(), o_th.state_dict()
    assert sd["state"][0]["step"] == tsd["state"][0]["step"] == 6
    np.testing.assert_allclose(sd["state"][0]["exp_avg_sq"].numpy(),
                               tsd["state"][0]["exp_avg_sq"].numpy(), rtol=1e-5, atol=1e-8)


def test_sparse_adam_refuses_dense_gradients_like_torch():
    p = shardflow.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    o = optim.SparseAdam([p])
    p.grad = shardflow.ones(2, 2)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please "
                                           "consider Adam instead"):
        o.step()
    assert np.array_equal(p.numpy(), np.ones((2, 2)))


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.NAdam(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.NAdam(p, momentum_decay=-0.1), "Invalid momentum_decay value: -0.1"),
    (lambda p: optim.RAdam(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: optim.Adamax(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: optim.Adamax(p, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    (lambda p: optim.Rprop(p, etas=(1.1, 1.2)), "Invalid eta values: 1.1, 1.2"),
    (lambda p: optim.ASGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (lambda p: optim.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda p: optim.Adafactor(p, eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    (lambda p: optim.SparseAdam(p, lr=0.0), "Invalid learning rate: 0.0"),
])
def test_bad_arguments_raise_like_torch(make, match):
    with pytest.raises(ValueError, match=match):
        make([shardflow.tensor(np.ones(2, np.float32), requires_grad=True)])


def test_options_torch_programs_pass_are_accepted():
    p = [shardflow.tensor(np.ones(2, np.float32), requires_grad=True)]
    for name in ("NAdam", "RAdam", "Adamax"):
        getattr(optim, name)(p, foreach=False, maximize=True, capturable=False, differentiable=False)
    optim.Rprop(p, foreach=None, capturable=False, differentiable=False)
    optim.ASGD(p, foreach=None, capturable=False, differentiable=False)
    optim.Adafactor(p, foreach=None, maximize=False)
    assert shardflow.optim.NAdam is optim.NAdam
