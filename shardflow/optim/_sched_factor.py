"""Multiplicative-factor schedulers (``torch.optim.lr_scheduler``): MultiplicativeLR,
ConstantLR, PolynomialLR, with PyTorch's recursive ``get_lr`` and closed forms.

* MultiplicativeLR: ``lr_t = lr_{t-1} * lr_lambda(t)`` (the construction step leaves lr).
* ConstantLR: ``lr = base_lr * factor`` for ``t < total_iters``, then ``base_lr``.
* PolynomialLR: ``lr = base_lr * (1 - min(t, total_iters) / total_iters) ** power``.
"""

from __future__ import annotations

from ._get_lr_guard import _warn_get_lr_called_within_step
from .lr_scheduler import LRScheduler, _LambdaScheduler, _lrs


class MultiplicativeLR(_LambdaScheduler):
    """Multiply each group's lr by ``lr_lambda(epoch)`` at every step (one function, or one
    per param group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self._set_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _lrs(self)
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, _lrs(self))]


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` until epoch ``total_iters``, then restore it."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1, got "
                             f"{factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [lr * self.factor for lr in _lrs(self)]
        if self.last_epoch != self.total_iters:
            return _lrs(self)
        return [lr * (1.0 / self.factor) for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        done = self.last_epoch >= self.total_iters
        return [b * (self.factor + done * (1 - self.factor)) for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr polynomially (``power``) to zero over ``total_iters`` steps."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        e, n = self.last_epoch, self.total_iters
        if self._is_initial or e > n:
            return _lrs(self)
        decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * decay for lr in _lrs(self)]

    def _get_closed_form_lr(self):
        e, n = self.last_epoch, self.total_iters
        return [b * (1.0 - min(n, e) / n) ** self.power for b in self.base_lrs]


__all__ = ["MultiplicativeLR", "ConstantLR", "PolynomialLR"]
