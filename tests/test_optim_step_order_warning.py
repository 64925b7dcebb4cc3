"""A scheduler's first ``step()`` before any ``optimizer.step()`` warns as torch's does
(pytorch/pytorch#20124: the schedule's first value is then skipped), and an optimizer whose
``step`` was replaced on the instance gets torch's "has been overridden" warning. The
classic CIFAR loops (``scheduler.step()`` once per epoch after the batches) do not warn;
programs that step the scheduler first print torch's warning on shardflow too."""

import warnings

import pytest
import torch

import shardflow

BEFORE = "Detected call of `lr_scheduler.step()` before `optimizer.step()`."
OVERRIDDEN = "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization."

SCHEDULERS = [
    ("StepLR", lambda s, o: s.StepLR(o, 1)),
    ("MultiStepLR", lambda s, o: s.MultiStepLR(o, [1, 2])),
    ("CosineAnnealingLR", lambda s, o: s.CosineAnnealingLR(o, 4)),
    ("OneCycleLR", lambda s, o: s.OneCycleLR(o, 1.0, total_steps=5)),
    ("LambdaLR", lambda s, o: s.LambdaLR(o, lambda e: 0.5 ** e)),
    ("CyclicLR", lambda s, o: s.CyclicLR(o, 0.1, 1.0, step_size_up=2)),
]


def _messages(lib, make, optimizer_first: bool, override: bool = False, steps: int = 3):
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
    sched = make(lib.optim.lr_scheduler, opt)
    if override:
        opt.step = lambda closure=None: None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(steps):
            if optimizer_first:
                p.sum().backward()
                opt.step()
            sched.step()
            if not optimizer_first:
                p.sum().backward()
                opt.step()
    return [str(w.message).split(" In PyTorch")[0].split(" Please,")[0] for w in caught
            if w.category is UserWarning]


@pytest.mark.parametrize("name,make", SCHEDULERS, ids=[n for n, _ in SCHEDULERS])
def test_scheduler_before_optimizer_warns_once_like_torch(name, make):
    th = _messages(torch, make, optimizer_first=False)
    sf = _messages(shardflow, make, optimizer_first=False)
    assert th == [BEFORE]
    assert sf == th


@pytest.mark.parametrize("name,make", SCHEDULERS, ids=[n for n, _ in SCHEDULERS])
def test_optimizer_first_does_not_warn(name, make):
    assert _messages(torch, make, optimizer_first=True) == []
    assert _messages(shardflow, make, optimizer_first=True) == []


def test_step_replaced_on_the_instance_warns_overridden():
    make = SCHEDULERS[0][1]
    th = _messages(torch, make, optimizer_first=True, override=True)
    assert th == [OVERRIDDEN]
    assert _messages(shardflow, make, optimizer_first=True, override=True) == th


def test_optimizer_stepped_before_the_scheduler_was_made_still_warns():
    """torch watches the optimizer's steps from its first scheduler on; a second scheduler
    on the same optimizer keeps what the first saw."""
    seen = []
    for lib in (torch, shardflow):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        p.sum().backward()
        opt.step()
        first = lib.optim.lr_scheduler.StepLR(opt, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first.step()
            opt.step()
            second = lib.optim.lr_scheduler.ExponentialLR(opt, 0.9)
            second.step()
        seen.append([str(w.message)[:60] for w in caught])
    assert seen[0] == [BEFORE[:60]]
    assert seen[1] == seen[0]


@pytest.mark.parametrize("plateau", [False, True], ids=["StepLR", "ReduceLROnPlateau"])
def test_step_with_an_epoch_warns_torch_text(plateau):
    """``scheduler.step(epoch)`` warns with torch's ``EPOCH_DEPRECATION_WARNING`` text,
    which both libraries export from ``optim.lr_scheduler``."""
    assert shardflow.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING == torch.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING
    seen = []
    for lib in (torch, shardflow):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        sched = (lib.optim.lr_scheduler.ReduceLROnPlateau(opt) if plateau
                 else lib.optim.lr_scheduler.StepLR(opt, 1))
        opt.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched.step(1.0, 3) if plateau else sched.step(3)
        seen.append([(w.category, str(w.message)) for w in caught])
    assert seen[0] == [(UserWarning, torch.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING)]
    assert seen[1] == seen[0]
