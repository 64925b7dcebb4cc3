"""Adadelta (PyTorch's formulas, in place on raw arrays).

Per parameter (``g`` negated if ``maximize``)::

    g = g + weight_decay * p
    square_avg = rho * square_avg + (1 - rho) * g * g
    delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
    acc_delta = rho * acc_delta + (1 - rho) * delta * delta
    p = p - lr * delta

State: ``step``, ``square_avg``, ``acc_delta``.
"""

from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _bump, real_view


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr} (expected lr >= 0)")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho} (expected 0 <= rho <= 1)")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps} (expected eps >= 0)")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay} (expected >= 0)")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x, g = real_view(p.array), real_view(p.grad.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["square_avg"] = self._zeros_like(p)
                    st["acc_delta"] = self._zeros_like(p)
                st["step"].array += 1
                g = self._effective_grad(x, g, wd, maximize)
                sq, acc = real_view(st["square_avg"].array), real_view(st["acc_delta"].array)
                delta = self._scratch(x)
                std = self._scratch(x, 2)
                sq *= rho
                np.multiply(g, g, out=delta)
                delta *= 1 - rho
                sq += delta
                np.add(sq, eps, out=std)
                np.sqrt(std, out=std)
                np.add(acc, eps, out=delta)
                np.sqrt(delta, out=delta)
                delta /= std
                delta *= g
                acc *= rho
                np.multiply(delta, delta, out=std)
                std *= 1 - rho
                acc += std
                delta *= lr
                x -= delta
                _bump(p)
        return loss
