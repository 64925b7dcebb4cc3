"""Optimizers, schedulers and gradient clipping against torch.optim (same parameters and
gradients in both, compared after every run)."""

import copy
import math

import numpy as np
import pytest
import torch

import shardflow
from shardflow import optim
from shardflow.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

# (257, 300) has more elements than ops.blocked.BLOCK_ELEMENTS: Adam updates it block by block
SHAPES = [(4, 3), (5,), (2, 3, 2), (257, 300)]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    sf = [shardflow.tensor(a, requires_grad=True) for a in arrs]
    th = [torch.tensor(a, requires_grad=True) for a in arrs]
    return sf, th


def _set_grads(sf, th, rng):
    for s, t in zip(sf, th):
        g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        s.grad = shardflow.tensor(g)
        t.grad = torch.tensor(g)


def _run(make_sf, make_th, steps=10, groups=None):
    sf, th = _params()
    if groups is None:
        o_sf, o_th = make_sf(sf), make_th(th)
    else:
        o_sf, o_th = make_sf(groups(sf)), make_th(groups(th))
    rng = np.random.default_rng(1)
    for _ in range(steps):
        _set_grads(sf, th, rng)
        o_sf.step()
        o_th.step()
    for s, t in zip(sf, th):
        np.testing.assert_allclose(s.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    return o_sf, o_th, sf, th


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(k for k in kw)}" for n, kw in CASES])
def test_optimizer_matches_torch(name, kw):
    _run(lambda p: getattr(optim, name)(p, **kw), lambda p: getattr(torch.optim, name)(p, **kw))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_param_groups_with_different_lr(name):
    extra = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}

    def groups(ps):
        return [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.003, "weight_decay": 0.1}]

    o_sf, _, _, _ = _run(lambda g: getattr(optim, name)(g, lr=0.05, **extra),
                         lambda g: getattr(torch.optim, name)(g, lr=0.05, **extra), groups=groups)
    assert o_sf.param_groups[0]["lr"] == 0.05 and o_sf.param_groups[1]["lr"] == 0.003
    assert o_sf.param_groups[0]["weight_decay"] == o_sf.defaults["weight_decay"]  # filled in


def _state_np(sd):
    return {k: {n: (v.numpy() if hasattr(v, "numpy") else v) for n, v in s.items()}
            for k, s in sd["state"].items()}


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
                                     ("Adagrad", dict(lr=0.1))])
def test_state_dict_matches_torch_and_round_trips(name, kw):
    o_sf, o_th, sf, th = _run(lambda p: getattr(optim, name)(p, **kw),
                              lambda p: getattr(torch.optim, name)(p, **kw), steps=3)
    sd, tsd = o_sf.state_dict(), o_th.state_dict()
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    a, b = _state_np(sd), _state_np(tsd)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].keys() == b[k].keys(), (a[k].keys(), b[k].keys())
        for n in a[k]:
            # the handbook's float32 parity tolerance: centered RMSprop's sqrt(v - avg^2)
            # cancels, so a few of the 77k entries of the big parameter differ by ~2e-6
            np.testing.assert_allclose(np.asarray(a[k][n], np.float64), np.asarray(b[k][n], np.float64),
                                       rtol=1e-4, atol=1e-5)
    # round trip: a fresh optimizer loaded from the dict continues exactly like the original
    saved = copy.deepcopy(sd)
    clones = [shardflow.tensor(p.numpy().copy(), requires_grad=True) for p in sf]
    o2 = getattr(optim, name)(clones, **kw)
    o2.load_state_dict(saved)
    rng = np.random.default_rng(5)
    for _ in range(3):
        for p, c in zip(sf, clones):
            g = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            p.grad, c.grad = shardflow.tensor(g), shardflow.tensor(g.copy())
        o_sf.step()
        o2.step()
    for p, c in zip(sf, clones):
        np.testing.assert_array_equal(p.numpy(), c.numpy())
    # the loaded state is a copy, not shared with the saved dict
    for k in saved["state"]:
        for n, v in saved["state"][k].items():
            assert v is not o2.state[clones[k]][n]


def test_load_state_dict_mismatch_errors():
    sf, _ = _params()
    o = optim.SGD(sf, lr=0.1)
    with pytest.raises(ValueError, match="number of parameter groups"):
        optim.SGD([{"params": sf[:1]}, {"params": sf[1:]}], lr=0.1).load_state_dict(o.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD(sf[:2], lr=0.1).load_state_dict(o.state_dict())


@pytest.mark.parametrize("name,key", [("Adam", "exp_avg"), ("SGD", "momentum_buffer")])
def test_load_state_dict_refuses_state_of_another_shape_before_changing_anything(name, key):
    """A state tensor whose shape is not its parameter's (issue 27: one rank's shard of a
    sharded parameter) is refused at load with a ValueError naming the parameter, the key,
    both shapes and the fix; the optimizer is left as it was. PyTorch accepts the same
    dict and fails only in step() ("The size of tensor a (8) must match ...")."""
    kw = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    sp, tp = shardflow.tensor(np.ones(4, np.float32), requires_grad=True), torch.ones(4, requires_grad=True)
    so, to = getattr(optim, name)([sp], **kw), getattr(torch.optim, name)([tp], **kw)
    for p, o, lib in ((sp, so, shardflow), (tp, to, torch)):
        p.grad = lib.ones(4)
        o.step()
    before = dict(so.state[sp])
    bad_sf, bad_th = copy.deepcopy(so.state_dict()), copy.deepcopy(to.state_dict())
    for bad, lib in ((bad_sf, shardflow), (bad_th, torch)):
        bad["state"][0][key] = lib.zeros(8)
        bad["param_groups"][0]["lr"] = 0.5
    with pytest.raises(ValueError, match=rf"state '{key}' of parameter 0 has shape \(8,\), but "
                                         r"the parameter has shape \(4,\)") as err:
        so.load_state_dict(bad_sf)
    assert "nothing was loaded" in str(err.value) and "Load state saved for the same" in str(err.value)
    assert all(so.state[sp][k] is v for k, v in before.items()) and so.param_groups[0]["lr"] == 0.1
    # a torch state dict of the wrong shape is refused the same way (converted tensors)
    with pytest.raises(ValueError, match=rf"state '{key}' of parameter 0 has shape \(8,\)"):
        so.load_state_dict(bad_th)
    to.load_state_dict(bad_th)  # PyTorch: accepted here ...
    with pytest.raises(RuntimeError, match="must match the size"):
        to.step()  # ... and wrong in step


def test_zero_grad_and_base_errors():
    sf, _ = _params()
    o = optim.Adam(sf)
    for p in sf:
        p.grad = shardflow.tensor(np.ones(p.shape, np.float32))
    o.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in sf)
    o.zero_grad()
    assert all(p.grad is None for p in sf)
    o.step()  # no gradients: nothing happens
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": sf[:2]}, {"params": sf[1:]}], lr=0.1)


def test_closure_is_called_and_returned():
    sf, _ = _params()
    o = optim.SGD(sf, lr=0.1)
    calls = []

    def closure():
        calls.append(1)
        return 3.0

    assert o.step(closure) == 3.0 and calls == [1]


# --------------------------------------------------------------------------- schedulers
def _sched_pair(make, opt_name="SGD", opt_kw=None, groups=True):
    opt_kw = opt_kw or {"lr": 0.1, "momentum": 0.9}
    sf, th = _params()
    if groups:
        gs = lambda ps: [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.02}]
        o_sf, o_th = getattr(optim, opt_name)(gs(sf), **opt_kw), getattr(torch.optim, opt_name)(gs(th), **opt_kw)
    else:
        o_sf, o_th = getattr(optim, opt_name)(sf, **opt_kw), getattr(torch.optim, opt_name)(th, **opt_kw)
    return make(optim.lr_scheduler, o_sf), make(torch.optim.lr_scheduler, o_th), o_sf, o_th


SCHEDS = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=8, eta_min=0.001),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 1.0 / (1 + e)),
    "LambdaLR_list": lambda m, o: m.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1 + 0.1 * e]),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=10),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=40),
    "OneCycleLR_linear_3phase": lambda m, o: m.OneCycleLR(o, max_lr=0.3, epochs=4, steps_per_epoch=10,
                                                         anneal_strategy="linear", three_phase=True),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=10),
            m.ExponentialLR(o, gamma=0.9)], milestones=[5, 20]),
}


@pytest.mark.parametrize("name", list(SCHEDS))
def test_scheduler_lr_sequence_matches_torch(name):
    s_sf, s_th, o_sf, o_th = _sched_pair(SCHEDS[name])
    for i in range(39):
        np.testing.assert_allclose(s_sf.get_last_lr(), s_th.get_last_lr(), rtol=1e-12, atol=1e-15,
                                   err_msg=f"{name} at step {i}")
        assert [g["lr"] for g in o_sf.param_groups] == pytest.approx([g["lr"] for g in o_th.param_groups], rel=1e-12)
        if "momentum" in o_th.param_groups[0]:
            assert [g["momentum"] for g in o_sf.param_groups] == pytest.approx(
                [g["momentum"] for g in o_th.param_groups], rel=1e-12)
        o_sf.step()
        o_th.step()
        s_sf.step()
        s_th.step()


def test_onecycle_cycles_adam_beta1():
    s_sf, s_th, o_sf, o_th = _sched_pair(lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=20),
                                         "Adam", {"lr": 0.001})
    for _ in range(15):
        s_sf.step()
        s_th.step()
        assert o_sf.param_groups[0]["betas"][0] == pytest.approx(o_th.param_groups[0]["betas"][0], rel=1e-12)


def test_scheduler_state_dict_round_trip():
    s1, _, o1, _ = _sched_pair(SCHEDS["CosineAnnealingLR"])
    for _ in range(5):
        s1.step()
    sd = s1.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 5
    s2, _, o2, _ = _sched_pair(SCHEDS["CosineAnnealingLR"])
    s2.load_state_dict(sd)
    for g2, g1 in zip(o2.param_groups, o1.param_groups):
        g2["lr"] = g1["lr"]
    for _ in range(10):
        s1.step()
        s2.step()
        assert s1.get_last_lr() == s2.get_last_lr()


def test_chained_schedulers_match_torch():
    def make(m, o):
        return [m.ExponentialLR(o, gamma=0.9), m.StepLR(o, step_size=3, gamma=0.5)]

    s_sf, s_th, _, _ = _sched_pair(make)
    for _ in range(30):
        for a, b in zip(s_sf, s_th):
            a.step()
            b.step()
        np.testing.assert_allclose(s_sf[-1].get_last_lr(), s_th[-1].get_last_lr(), rtol=1e-12)


# --------------------------------------------------------------------------- clipping
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    sf, th = _params()
    _set_grads(sf, th, np.random.default_rng(3))
    a = clip_grad_norm_(sf, max_norm, norm_type=norm_type)
    b = torch.nn.utils.clip_grad_norm_(th, max_norm, norm_type=norm_type)
    assert a.dtype == shardflow.float32 and a.shape == ()
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
    for s, t in zip(sf, th):
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_nonfinite_and_empty():
    sf, _ = _params()
    assert float(clip_grad_norm_(sf, 1.0)) == 0.0  # no grads
    sf[0].grad = shardflow.tensor(np.full(SHAPES[0], np.inf, np.float32))
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(sf, 1.0, error_if_nonfinite=True)


def test_clip_grad_value_matches_torch():
    sf, th = _params()
    _set_grads(sf, th, np.random.default_rng(4))
    clip_grad_value_(sf, 0.5)
    torch.nn.utils.clip_grad_value_(th, 0.5)
    for s, t in zip(sf, th):
        np.testing.assert_array_equal(s.grad.numpy(), t.grad.numpy())


def test_constructor_kwargs_rebuild_every_optimizer_from_its_defaults():
    """ZeRO and parallelize rebuild the user's optimizer as ``type(opt)(params, **kwargs)``:
    AdamW records ``decoupled_weight_decay=True`` in its defaults (as torch's) but does not take
    it, which broke ``parallelize(..., zero=1)`` with AdamW."""
    from shardflow.optim.optimizer import constructor_kwargs

    for cls in (optim.AdamW, optim.Adam, optim.SGD, optim.NAdam, optim.RMSprop):
        opt = cls([shardflow.zeros(2, requires_grad=True)], lr=0.01)
        again = cls([shardflow.zeros(2, requires_grad=True)], **constructor_kwargs(opt))
        assert again.defaults == opt.defaults, cls.__name__
    assert "decoupled_weight_decay" in optim.AdamW([shardflow.zeros(1, requires_grad=True)]).defaults
