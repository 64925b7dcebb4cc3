"""The lr schedulers added for torch compatibility (MultiplicativeLR, ConstantLR,
PolynomialLR, CyclicLR, CosineAnnealingWarmRestarts, ChainedScheduler, ReduceLROnPlateau)
against torch 2.13 over many steps: lrs, cycled momentum, state_dict and error messages."""

import copy
import warnings

import numpy as np
import pytest
import torch

import shardflow
from shardflow import optim

pytestmark = pytest.mark.filterwarnings(r"ignore:Detected call of `lr_scheduler.step\(\)`:UserWarning")


def _pair(make, opt_name="SGD", opt_kw=None):
    """The same two-group optimizer in shardflow and torch, each with ``make``'s scheduler."""
    opt_kw = {"lr": 0.1, "momentum": 0.9} if opt_kw is None else opt_kw
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    sf = [shardflow.tensor(a, requires_grad=True) for a in arrs]
    th = [torch.tensor(a, requires_grad=True) for a in arrs]
    groups = lambda ps: [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.02}]  # noqa: E731
    o_sf = getattr(optim, opt_name)(groups(sf), **opt_kw)
    o_th = getattr(torch.optim, opt_name)(groups(th), **opt_kw)
    return make(optim.lr_scheduler, o_sf), make(torch.optim.lr_scheduler, o_th), o_sf, o_th


def _assert_same_groups(o_sf, o_th, where):
    for key in ("lr", "momentum", "betas"):
        if key in o_th.param_groups[0]:
            a = [g[key] for g in o_sf.param_groups]
            b = [g[key] for g in o_th.param_groups]
            np.testing.assert_allclose(np.array(a, float), np.array(b, float), rtol=1e-12,
                                       atol=1e-15, err_msg=f"{key} {where}")


SCHEDS = {
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95),
    "MultiplicativeLR_list": lambda m, o: m.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - 0.01 * e]),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=7),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0),
    "CyclicLR_triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4),
    "CyclicLR_triangular2": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                   mode="triangular2", base_momentum=0.7),
    "CyclicLR_exp_range": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="exp_range",
                                                 gamma=0.97),
    "CyclicLR_scale_fn": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 0.9**x,
                                                scale_mode="iterations", cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.001),
    "CosineAnnealingWarmRestarts_Tmult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.9),
         m.PolynomialLR(o, total_iters=20)]),
}


@pytest.mark.parametrize("name", list(SCHEDS))
def test_scheduler_matches_torch_over_many_steps(name):
    s_sf, s_th, o_sf, o_th = _pair(SCHEDS[name])
    for i in range(35):
        np.testing.assert_allclose(s_sf.get_last_lr(), s_th.get_last_lr(), rtol=1e-12, atol=1e-15,
                                   err_msg=f"{name} at step {i}")
        _assert_same_groups(o_sf, o_th, f"{name} at step {i}")
        o_sf.step()
        o_th.step()
        s_sf.step()
        s_th.step()


def test_cyclic_lr_cycles_adam_beta1_like_torch():
    make = lambda m, o: m.CyclicLR(o, 0.001, 0.01, step_size_up=3, base_momentum=0.8,  # noqa: E731
                                   max_momentum=0.95)
    s_sf, s_th, o_sf, o_th = _pair(make, "Adam", {"lr": 0.001, "betas": (0.9, 0.99)})
    for i in range(14):
        _assert_same_groups(o_sf, o_th, f"step {i}")
        assert o_sf.param_groups[0]["betas"][1] == 0.99
        o_sf.step()
        o_th.step()
        s_sf.step()
        s_th.step()


@pytest.mark.parametrize("name", ["ConstantLR", "PolynomialLR"])
def test_step_with_epoch_uses_the_closed_form_like_torch(name):
    s_sf, s_th, o_sf, o_th = _pair(SCHEDS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 9, 2, 15, 7):
            s_sf.step(epoch)
            s_th.step(epoch)
            np.testing.assert_allclose(s_sf.get_last_lr(), s_th.get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("T_mult", [1, 2])
def test_warm_restarts_with_fractional_epochs_match_torch(T_mult):
    make = lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=T_mult, eta_min=1e-3)  # noqa: E731
    s_sf, s_th, o_sf, o_th = _pair(make)
    iters = 4
    for epoch in range(9):
        for i in range(iters):
            s_sf.step(epoch + i / iters)
            s_th.step(epoch + i / iters)
            _assert_same_groups(o_sf, o_th, f"epoch {epoch} + {i}/{iters}")
            assert (s_sf.T_cur, s_sf.T_i, s_sf.last_epoch) == pytest.approx(
                (s_th.T_cur, s_th.T_i, s_th.last_epoch))
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s_sf.step(-1)


# a metric that improves, stalls, wobbles below the relative threshold, then worsens
METRICS = [1.0, 0.9, 0.9, 0.8999, 0.95, 0.93, 0.7, 0.7, 0.71, 0.69995, 0.8, 0.8, 0.8, 0.5,
           0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("threshold_mode", ["rel", "abs"])
@pytest.mark.parametrize("cooldown", [0, 2])
def test_reduce_lr_on_plateau_matches_torch(mode, threshold_mode, cooldown):
    make = lambda m, o: m.ReduceLROnPlateau(  # noqa: E731
        o, mode=mode, factor=0.5, patience=1, threshold=1e-3, threshold_mode=threshold_mode,
        cooldown=cooldown, min_lr=[0.01, 0.004])
    s_sf, s_th, o_sf, o_th = _pair(make)
    sign = 1 if mode == "min" else -1
    for i, metric in enumerate(METRICS):
        s_sf.step(shardflow.tensor(sign * metric, dtype=shardflow.float64))  # a loss tensor
        s_th.step(torch.tensor(sign * metric, dtype=torch.float64))
        _assert_same_groups(o_sf, o_th, f"after metric {i}")
        assert s_sf.get_last_lr() == s_th.get_last_lr()
        for key in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
            assert getattr(s_sf, key) == getattr(s_th, key), (key, i)
    assert o_sf.param_groups[1]["lr"] == 0.004  # reached min_lr


def test_reduce_lr_on_plateau_eps_skips_tiny_changes_like_torch():
    make = lambda m, o: m.ReduceLROnPlateau(o, factor=0.9, patience=0, eps=0.005)  # noqa: E731
    s_sf, s_th, o_sf, o_th = _pair(make)
    for i in range(6):
        s_sf.step(1.0)
        s_th.step(1.0)
        _assert_same_groups(o_sf, o_th, f"step {i}")
    assert o_sf.param_groups[1]["lr"] == 0.02  # 0.02 * 0.1 = 0.002 < eps: never changed


def _public(state):
    return {k for k in state if not k.startswith("_get_lr_called")}


@pytest.mark.parametrize("name", list(SCHEDS) + ["ReduceLROnPlateau"])
def test_state_dict_has_torch_keys_and_resumes(name):
    plateau = name == "ReduceLROnPlateau"
    make = (lambda m, o: m.ReduceLROnPlateau(o, patience=1, cooldown=1)) if plateau else SCHEDS[name]
    s_sf, s_th, o_sf, _ = _pair(make)

    def advance(s, i):
        s.step(1.0 / (1 + i % 3)) if plateau else s.step()

    for i in range(6):
        advance(s_sf, i)
        advance(s_th, i)
    sd, tsd = s_sf.state_dict(), s_th.state_dict()
    assert _public(sd) == _public(tsd)
    if "_schedulers" in sd:
        for a, b in zip(sd["_schedulers"], tsd["_schedulers"]):
            assert _public(a) == _public(b)
    saved = copy.deepcopy(sd)
    lrs = [g["lr"] for g in o_sf.param_groups]
    moms = [g.get("momentum") for g in o_sf.param_groups]
    s2, _, o2, _ = _pair(make)
    s2.load_state_dict(saved)
    for g, lr, mom in zip(o2.param_groups, lrs, moms):  # the optimizer's own state_dict would carry these
        g["lr"], g["momentum"] = lr, mom
    for i in range(6, 20):
        advance(s_sf, i)
        advance(s2, i)
        assert s2.get_last_lr() == s_sf.get_last_lr(), i
        assert [g["lr"] for g in o2.param_groups] == [g["lr"] for g in o_sf.param_groups]


def test_bad_arguments_raise_like_torch():
    sf = [shardflow.tensor(np.ones(2, np.float32), requires_grad=True)]
    sgd = optim.SGD(sf, lr=0.1)
    L = optim.lr_scheduler
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        L.ReduceLROnPlateau(sgd, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        L.ReduceLROnPlateau(sgd, mode="avg")
    with pytest.raises(ValueError, match="threshold mode x is unknown"):
        L.ReduceLROnPlateau(sgd, threshold_mode="x")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        L.ReduceLROnPlateau(sgd, min_lr=[0.1, 0.2])
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        L.CosineAnnealingWarmRestarts(sgd, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        L.CosineAnnealingWarmRestarts(sgd, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        L.CyclicLR(sgd, 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        L.CyclicLR(optim.Adagrad(sf), 0.01, 0.1)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1"):
        L.ConstantLR(sgd, factor=2.0)
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        L.MultiplicativeLR(sgd, 0.9)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        L.ChainedScheduler([L.ReduceLROnPlateau(sgd)])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        L.ChainedScheduler([])
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        L.ReduceLROnPlateau([sgd])


def test_legacy_lrscheduler_base_class_runs_a_custom_scheduler_like_torch():
    def make(m, o):
        class Warmup(m._LRScheduler):  # the pre-2.0 base name old programs subclass
            def get_lr(self):
                return [b * min(1.0, (self.last_epoch + 1) / 4) for b in self.base_lrs]

        return Warmup(o)

    s_sf, s_th, o_sf, o_th = _pair(make)
    assert isinstance(s_sf, optim.lr_scheduler.LRScheduler)
    for i in range(6):
        _assert_same_groups(o_sf, o_th, f"step {i}")
        s_sf.step()
        s_th.step()


def test_every_scheduler_class_is_of_the_lr_scheduler_module_as_in_torch():
    """d2l.ai's ``train`` tells a built-in scheduler from its own function by
    ``scheduler.__module__ == lr_scheduler.__name__``: every scheduler class's ``__module__``
    is ``shardflow.optim.lr_scheduler`` as torch's is ``torch.optim.lr_scheduler`` (the
    families defined in ``_sched_*.py`` said their own module, and d2l then called the
    ReduceLROnPlateau / CyclicLR / ... object as a function)."""
    import torch

    from shardflow.optim import lr_scheduler

    names = [n for n in dir(torch.optim.lr_scheduler) if n.endswith(("LR", "Restarts", "Scheduler", "Plateau"))
             and not n.startswith("_")]
    assert len(names) >= 15
    for name in names:
        assert getattr(torch.optim.lr_scheduler, name).__module__ == "torch.optim.lr_scheduler", name
        assert getattr(lr_scheduler, name).__module__ == lr_scheduler.__name__, name
