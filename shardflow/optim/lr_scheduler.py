"""Learning-rate schedulers with PyTorch's names and exact formulas.

``LRScheduler`` (``last_epoch``, ``step()``, ``get_last_lr()``, ``state_dict()`` /
``load_state_dict()``): construction records ``initial_lr`` in every param group and takes
the initial step (epoch 0). ``step()`` uses each scheduler's recursive ("chainable") form,
as PyTorch does, so several schedulers may act on the same optimizer; ``step(epoch)`` uses
the closed form where one exists.

The first ``step()`` after construction warns as torch's does when the optimizer has not
stepped since the optimizer's first scheduler was made, or when its ``step`` was replaced on
the instance (pytorch/pytorch#20124; every optimizer step marks ``_opt_called`` in
``hooks.hooked_step``); ``step(epoch)`` warns with torch's ``EPOCH_DEPRECATION_WARNING``.

Schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, LinearLR,
OneCycleLR, SequentialLR; and, one family per module, MultiplicativeLR / ConstantLR /
PolynomialLR (``_sched_factor.py``), CyclicLR / CosineAnnealingWarmRestarts
(``_sched_cyclic.py``), ReduceLROnPlateau (``_sched_plateau.py``) and ChainedScheduler
(``_sched_chain.py``), re-exported at the end of this module with their ``__module__``
set to this one, as torch's are (d2l.ai's ``train`` tells a built-in scheduler from its own
by ``scheduler.__module__ == lr_scheduler.__name__``).
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from ._get_lr_guard import _enable_get_lr_call, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = [
    "LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR",
    "LinearLR", "OneCycleLR", "SequentialLR", "MultiplicativeLR", "ConstantLR", "PolynomialLR",
    "CyclicLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau", "ChainedScheduler",
]


# torch's text, word for word (programs and tests match on it)
EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


class LRScheduler:
    # True only while step() calls get_lr() (PyTorch's flag; see _get_lr_guard)
    _get_lr_called_within_step = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "an optimizer; pass last_epoch=-1 or load the optimizer's state first"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        if not optimizer.__dict__.get("_lr_sched_tracks_steps"):
            # torch starts watching the optimizer's steps at its first scheduler (it wraps
            # ``step`` then): steps taken before do not count for the order warning
            optimizer.__dict__["_lr_sched_tracks_steps"] = True
            optimizer.__dict__["_opt_called"] = False
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the construction step with ``_is_initial`` set (as PyTorch's
        ``_initial_mode``): recursive schedulers return the lr unchanged then."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def get_lr(self) -> list[float]:  # pragma: no cover - interface
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1:  # the first step after construction's
            _warn_step_order(self.optimizer)
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            with _enable_get_lr_call(self):
                values = self.get_lr()
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            with _enable_get_lr_call(self):
                values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


def _warn_step_order(optimizer) -> None:
    """torch's two warnings (pytorch/pytorch#20124) for a scheduler's first ``step()``: the
    optimizer's ``step`` was replaced on the instance (then the order cannot be checked),
    or the optimizer has not stepped yet (the schedule's first value is skipped)."""
    if not getattr(optimizer.step, "_hooked_step", False):
        warnings.warn(
            "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
            "initialization. Please, make sure to call `optimizer.step()` before "
            "`lr_scheduler.step()`. See more details at "
            "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
            UserWarning, stacklevel=3,
        )
    elif not optimizer.__dict__.get("_opt_called", False):
        warnings.warn(
            "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
            "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
            "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
            "will result in PyTorch skipping the first value of the learning rate schedule. "
            "See more details at "
            "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
            UserWarning, stacklevel=3,
        )


class _LRScheduler(LRScheduler):
    """PyTorch's pre-2.0 base-class name, kept as a subclass (as torch does) so that
    schedulers written as ``class Warmup(torch.optim.lr_scheduler._LRScheduler)`` run."""


def _lrs(sched):
    return [group["lr"] for group in sched.optimizer.param_groups]


class _LambdaScheduler(LRScheduler):
    """What LambdaLR and MultiplicativeLR share: one lr function per param group, saved as
    PyTorch saves them (functions and lambdas are not saved; callable objects save their
    ``__dict__``). Not a base PyTorch has: neither is an instance of the other there."""

    def _set_lambdas(self, optimizer, lr_lambda) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, list | tuple):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)

    def state_dict(self) -> dict:
        """Functions and lambdas are not saved; callable objects save their ``__dict__``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for i, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state["lr_lambdas"][i] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for i, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[i].__dict__.update(fn)


class LambdaLR(_LambdaScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per param group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self)
        return [lr * self.gamma for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (repeated milestones multiply again)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _lrs(self)
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        # torch tests the construction step, not epoch 0: a get_lr() call of the program's
        # own right after construction gives the next lr (lr * gamma), as in torch
        if self._is_initial:
            return _lrs(self)
        return [lr * self.gamma for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """SGDR cosine annealing without restarts, in PyTorch's recursive form."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:  # as torch: the construction step, not epoch 0
            return _lrs(self)
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for lr, b in zip(_lrs(self), self.base_lrs)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (lr - lo) + lo
                for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * e / T)) / 2 for b in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             f"less or equal to 1, got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, got "
                             f"{end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
        if e == 0:
            return [lr * s for lr in _lrs(self)]
        if self._is_initial or e > n:  # as torch: a resumed construction step keeps the lr
            return _lrs(self)
        return [lr * (1.0 + (f - s) / (n * s + (e - 1) * (f - s))) for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
        return [b * (s + (f - s) * min(n, e) / n) for b in self.base_lrs]


def _format_param(name, optimizer, value):
    if isinstance(value, list | tuple):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got "
                             f"{len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): warm up to ``max_lr`` then anneal to
    ``initial_lr / final_div_factor``, cycling momentum (or Adam's beta1) inversely."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not 0 <= pct_start <= 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', got {anneal_strategy}")
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * self.total_steps) - 1, start_lr="initial_lr",
                     end_lr="max_lr", start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * self.total_steps) - 2, start_lr="max_lr",
                     end_lr="initial_lr", start_momentum="base_momentum",
                     end_momentum="max_momentum"),
                dict(end_step=self.total_steps - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum"),
            ]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * self.total_steps) - 1, start_lr="initial_lr",
                     end_lr="max_lr", start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=self.total_steps - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy  # after the phases: torch's state_dict order
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                                 "option enabled; pass cycle_momentum=False")
            self.use_beta1 = "betas" in optimizer.defaults
            maxm = _format_param("max_momentum", optimizer, max_momentum)
            basem = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(maxm, basem, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (mm, *group["betas"][1:])
                    else:
                        group["momentum"] = mm
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}; create the scheduler with more total_steps")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[phase["start_momentum"]],
                                           group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


def _schedulers_state_dict(self) -> dict:
    """A scheduler of schedulers (SequentialLR, ChainedScheduler): its own attributes and each
    inner scheduler's state_dict under ``_schedulers``, as PyTorch saves it."""
    state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in self._schedulers]
    return state


def _load_schedulers_state_dict(self, state_dict: dict) -> None:
    state_dict = dict(state_dict)
    subs = state_dict.pop("_schedulers")
    self.__dict__.update(state_dict)
    for s, sd in zip(self._schedulers, subs):
        s.load_state_dict(sd)


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; each later
    scheduler is restarted (``step(0)``) at its milestone."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same "
                                 f"optimizer, but scheduler at index {i} does not")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one "
                             f"more than the number of milestone points, but got {len(schedulers)} "
                             f"schedulers and {len(milestones)} milestones")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:  # undo the initial step the schedulers took
            _undo(s)
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    state_dict = _schedulers_state_dict
    load_state_dict = _load_schedulers_state_dict


def _undo(s) -> None:
    if hasattr(s, "_schedulers"):
        for sub in s._schedulers:
            _undo(sub)
    elif hasattr(s, "last_epoch"):
        s.last_epoch -= 1


# The other scheduler families, defined on LRScheduler above (imported last for that reason).
from ._sched_chain import ChainedScheduler  # noqa: E402
from ._sched_cyclic import CosineAnnealingWarmRestarts, CyclicLR  # noqa: E402
from ._sched_factor import ConstantLR, MultiplicativeLR, PolynomialLR  # noqa: E402
from ._sched_plateau import ReduceLROnPlateau  # noqa: E402

for _cls in (ChainedScheduler, CosineAnnealingWarmRestarts, CyclicLR, ConstantLR, MultiplicativeLR,
             PolynomialLR, ReduceLROnPlateau):
    _cls.__module__ = __name__  # torch.optim.lr_scheduler.X.__module__ is that module
del _cls
