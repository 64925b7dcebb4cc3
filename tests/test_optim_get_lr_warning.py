"""A built-in scheduler's ``get_lr()`` called by the program (not by ``step()``) warns as
PyTorch's does and returns the same value (the pytorch/tutorials transformer tutorial prints
``scheduler.get_lr()[0]``); ``step()`` and a user's own ``get_lr`` do not warn."""

import warnings

import pytest
import torch

import shardflow

MESSAGE = "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."

SCHEDULERS = [
    ("StepLR", lambda s, o: s.StepLR(o, 1.0, gamma=0.95)),
    ("MultiStepLR", lambda s, o: s.MultiStepLR(o, [1, 2])),
    ("ExponentialLR", lambda s, o: s.ExponentialLR(o, 0.9)),
    ("CosineAnnealingLR", lambda s, o: s.CosineAnnealingLR(o, 4)),
    ("LinearLR", lambda s, o: s.LinearLR(o)),
    ("OneCycleLR", lambda s, o: s.OneCycleLR(o, 1.0, total_steps=5)),
    ("LambdaLR", lambda s, o: s.LambdaLR(o, lambda e: 0.5 ** e)),
    ("MultiplicativeLR", lambda s, o: s.MultiplicativeLR(o, lambda e: 0.5)),
    ("ConstantLR", lambda s, o: s.ConstantLR(o)),
    ("PolynomialLR", lambda s, o: s.PolynomialLR(o, 4)),
    ("CyclicLR", lambda s, o: s.CyclicLR(o, 0.1, 1.0, step_size_up=2)),
    ("CosineAnnealingWarmRestarts", lambda s, o: s.CosineAnnealingWarmRestarts(o, 2)),
]


def _run(lib, make):
    """(get_lr() values and whether each call warned, warnings from step()) for 3 epochs."""
    model = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = make(lib.optim.lr_scheduler, opt)
        assert not [w for w in caught if str(w.message) == MESSAGE], "construction warned"
        seen = []
        for _ in range(3):
            caught.clear()
            values = sched.get_lr()
            where = type(sched).get_lr.__code__.co_filename  # (a class may be re-exported under another __module__)
            seen.append((values, [(w.category, w.filename == where) for w in caught if str(w.message) == MESSAGE]))
            caught.clear()
            opt.step()
            sched.step()
            assert not [w for w in caught if str(w.message) == MESSAGE], "step() warned"
    return seen


@pytest.mark.parametrize("name,make", SCHEDULERS, ids=[n for n, _ in SCHEDULERS])
def test_get_lr_outside_step_warns_like_torch(name, make):
    th, sf = _run(torch, make), _run(shardflow, make)
    for (th_values, th_warned), (sf_values, sf_warned) in zip(th, sf):
        assert sf_values == pytest.approx(th_values, rel=1e-12)
        # one UserWarning, attributed to the scheduler's own module (its get_lr), as torch's
        assert sf_warned == th_warned == [(UserWarning, True)]


def test_swalr_get_lr_warns_like_torch():
    for lib in (torch, shardflow):
        opt = lib.optim.SGD(lib.nn.Linear(2, 1).parameters(), lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
        with pytest.warns(UserWarning, match="get_last_lr"):
            sched.get_lr()


def test_user_get_lr_and_step_do_not_warn():
    """A subclass's own get_lr does not warn (torch's warning lives in each built-in one)."""
    for lib in (torch, shardflow):

        class Half(lib.optim.lr_scheduler.LRScheduler):
            def get_lr(self):
                return [b * 0.5 ** self.last_epoch for b in self.base_lrs]

        opt = lib.optim.SGD(lib.nn.Linear(2, 1).parameters(), lr=0.5)
        sched = Half(opt)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert sched.get_lr() == [0.5]
            opt.step()
            sched.step()
            assert sched.get_last_lr() == [0.25]


@pytest.mark.parametrize("name,make", SCHEDULERS[:6], ids=[n for n, _ in SCHEDULERS[:6]])
def test_resumed_construction_keeps_the_lr_like_torch(name, make):
    """Built with ``last_epoch=2`` over an optimizer that already has ``initial_lr`` (a
    resume): the construction step keeps each group's lr where torch's does (LinearLR used
    to take a step), and the next steps follow torch's."""
    if name == "OneCycleLR":
        pytest.skip("OneCycleLR's resume needs max_lr/min_lr in the groups")
    seen = {}
    for lib in (torch, shardflow):
        opt = lib.optim.SGD(lib.nn.Linear(2, 1).parameters(), lr=0.3)
        opt.param_groups[0]["initial_lr"] = 0.5

        def resumed(s, o, _make=make):
            kwargs = {"last_epoch": 2}
            if name == "StepLR":
                return s.StepLR(o, 1.0, gamma=0.95, **kwargs)
            if name == "MultiStepLR":
                return s.MultiStepLR(o, [1, 3], **kwargs)
            if name == "ExponentialLR":
                return s.ExponentialLR(o, 0.9, **kwargs)
            if name == "CosineAnnealingLR":
                return s.CosineAnnealingLR(o, 4, **kwargs)
            return s.LinearLR(o, **kwargs)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = resumed(lib.optim.lr_scheduler, opt)
            lrs = [opt.param_groups[0]["lr"]]
            for _ in range(3):
                opt.step()
                sched.step()
                lrs.append(opt.param_groups[0]["lr"])
        seen[lib] = lrs
    assert seen[shardflow] == pytest.approx(seen[torch], rel=1e-12)
