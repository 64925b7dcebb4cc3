"""Adamax (Adam with the infinity norm; PyTorch's single-tensor formulas, in place).

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    g = g + weight_decay * p
    m = lerp(m, g, 1 - beta1)
    u = max(beta2 * u, |g| + eps)
    p = p - lr / (1 - beta1 ** t) * m / u

State: ``step``, ``exp_avg``, ``exp_inf``.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x = real_view(p.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["exp_avg"] = self._zeros_like(p)
                    st["exp_inf"] = self._zeros_like(p)
                st["step"].array += 1
                t = float(st["step"].array)
                g = self._effective_grad(x, real_view(p.grad.array), group["weight_decay"], group["maximize"])
                m, u = real_view(st["exp_avg"].array), real_view(st["exp_inf"].array)
                tmp = self._scratch(x)
                np.subtract(g, m, out=tmp)  # m.lerp_(g, 1 - b1)
                tmp *= 1 - b1
                m += tmp
                u *= b2
                np.abs(g, out=tmp)
                tmp += eps
                np.maximum(u, tmp, out=u)
                np.divide(m, u, out=tmp)
                tmp *= lr / (1 - b1**t)
                x -= tmp
                _bump(p)
        return loss
