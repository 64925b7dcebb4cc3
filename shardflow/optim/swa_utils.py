"""``torch.optim.swa_utils``: stochastic weight averaging (SWA) and exponential moving
averages (EMA) of a model's weights, with PyTorch's names and update formulas.

* ``AveragedModel(model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False)``
  holds a deep copy ``self.module`` and a buffer ``n_averaged`` (int64); ``forward``
  delegates to the copy (state_dict keys ``module.<...>`` and ``n_averaged``, as torch).
  ``update_parameters(model)``: the first call copies the model's parameters (and buffers
  with ``use_buffers``); later calls average ``p_avg <- avg_fn(p_avg, p, n_averaged)`` (one
  tensor at a time) or ``multi_avg_fn(avg_list, model_list, n_averaged)`` (in place on
  lists); neither given: the equal-weight running mean ``p_avg + (p - p_avg) / (n + 1)``.
  Without ``use_buffers`` the buffers are copied from ``model`` at every call.
* ``get_swa_avg_fn`` / ``get_swa_multi_avg_fn``: that running mean; ``get_ema_avg_fn(decay)``
  / ``get_ema_multi_avg_fn(decay)``: ``decay * p_avg + (1 - decay) * p`` (the multi forms use
  torch's lerp: ``a + w (b - a)`` for ``w < 0.5``, else ``b - (b - a)(1 - w)``).
* ``SWALR(optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos")``: anneals each
  group's lr from its value to ``swa_lr`` over ``anneal_epochs`` steps (cosine or linear),
  then holds it; the recursive form of torch's ``get_lr``.
* ``update_bn(loader, model, device=None)``: resets every BatchNorm's running statistics and
  recomputes them as a cumulative average (``momentum=None``) over one pass of ``loader``
  (the first element of list/tuple batches), restoring momenta and the training flag.
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy

from ..autograd import Tensor, no_grad
from ..nn.module import Module
from ..nn.modules.normalization import _BatchNorm
from ._get_lr_guard import _warn_get_lr_called_within_step
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _is_float(t: Tensor) -> bool:
    return t.array.dtype.kind in "fcV"  # V: bfloat16 (ml_dtypes)


def _lerp_(starts, ends, weight: float) -> None:
    """In place ``start <- lerp(start, end, weight)``, torch's two-sided formula."""
    for a, b in zip(starts, ends, strict=True):
        if weight < 0.5:
            a.copy_(a + weight * (b - a))
        else:
            a.copy_(b - (b - a) * (1 - weight))


def get_ema_multi_avg_fn(decay: float = 0.999):
    """In-place EMA of lists of tensors: ``avg <- decay * avg + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _num_averaged) -> None:
        with no_grad():
            if _is_float(ema_param_list[0]):
                _lerp_(ema_param_list, current_param_list, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean of lists of tensors: ``avg <- avg + (current - avg) / (n + 1)``."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        with no_grad():
            n = int(num_averaged.item()) if isinstance(num_averaged, Tensor) else num_averaged
            if _is_float(averaged_param_list[0]):
                _lerp_(averaged_param_list, current_param_list, 1 / (n + 1))
            else:
                for a, c in zip(averaged_param_list, current_param_list, strict=True):
                    a.copy_(a + (c - a) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """``avg_fn`` form of the EMA: returns ``decay * avg + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``avg_fn`` form of the running mean: returns ``avg + (current - avg) / (n + 1)``."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A running (SWA) or exponential (EMA) average of ``model``'s weights; see module docstring."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        from .. import ops

        self.register_buffer("n_averaged", ops.tensor(0, dtype="int64", device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (module docstring)."""
        if self.use_buffers:
            self_params = itertools.chain(self.module.parameters(), self.module.buffers())
            model_params = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            for p_averaged, p_model in zip(self_params, model_params, strict=False):
                p_model_ = p_model.detach().to(p_averaged.device)
                averaged.append(p_averaged.detach())
                current.append(p_model_)
                if first:
                    p_averaged.detach().copy_(p_model_)
            if not first:
                if self.avg_fn is not None:
                    for p_averaged, p_model in zip(averaged, current, strict=True):
                        p_averaged.copy_(self.avg_fn(p_averaged, p_model, self.n_averaged))
                elif self.multi_avg_fn is not None:
                    for group in _by_device_and_dtype(averaged, current):
                        self.multi_avg_fn(*group, self.n_averaged)
                else:  # torch's CPU route: the per-tensor running mean
                    avg_fn = get_swa_avg_fn()
                    for p_averaged, p_model in zip(averaged, current, strict=True):
                        p_averaged.copy_(avg_fn(p_averaged, p_model, self.n_averaged))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.copy_(self.n_averaged + 1)


def _by_device_and_dtype(averaged, current):
    """(averaged list, current list) per (device, dtype), first-seen order, as torch groups."""
    groups: dict = {}
    for a, c in zip(averaged, current, strict=True):
        key = (str(a.device), str(a.dtype))
        groups.setdefault(key, ([], []))
        groups[key][0].append(a)
        groups[key][1].append(c)
    return list(groups.values())


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running statistics over one pass of ``loader``."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, list | tuple):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for bn_module, momentum in momenta.items():
        bn_module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` in ``anneal_epochs`` steps, then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        groups = optimizer.param_groups
        if isinstance(swa_lr, list | tuple):
            if len(swa_lr) != len(groups):
                raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: "
                                 f"optimizer has {len(groups)}, got {len(swa_lr)}")
            swa_lrs = list(swa_lr)
        else:
            swa_lrs = [swa_lr] * len(groups)
        for lr, group in zip(swa_lrs, groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        # recover the lr before annealing from the current one, then take this step's mix
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
