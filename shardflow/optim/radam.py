"""RAdam (Liu et al. 2019, PyTorch's single-tensor formulas, in place on raw arrays).

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    p = p * (1 - lr * weight_decay)     (decoupled_weight_decay)   else  g = g + weight_decay * p
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    rho_t > 5:  p = p - lr * m / (1 - beta1^t) * rect * sqrt(1 - beta2^t) / (sqrt(v) + eps)
                with rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
    else:       p = p - lr * m / (1 - beta1^t)          (the un-adapted warm-up steps)

State: ``step``, ``exp_avg``, ``exp_avg_sq``.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            wd, decoupled = group["weight_decay"], group["decoupled_weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x = real_view(p.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["exp_avg"] = self._zeros_like(p)
                    st["exp_avg_sq"] = self._zeros_like(p)
                st["step"].array += 1
                t = float(st["step"].array)
                if wd != 0 and decoupled:
                    x *= 1 - lr * wd
                g = self._effective_grad(x, real_view(p.grad.array), 0 if decoupled else wd,
                                         group["maximize"])
                m, v = real_view(st["exp_avg"].array), real_view(st["exp_avg_sq"].array)
                tmp = self._scratch(x)
                np.subtract(g, m, out=tmp)  # m.lerp_(g, 1 - b1)
                tmp *= 1 - b1
                m += tmp
                v *= b2
                np.multiply(g, g, out=tmp)
                tmp *= 1 - b2
                v += tmp
                bc1, bc2 = 1 - b1**t, 1 - b2**t
                rho_inf = 2 / (1 - b2) - 1
                rho_t = rho_inf - 2 * t * b2**t / bc2
                np.divide(m, bc1, out=tmp)  # the bias-corrected first moment
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    denom = self._scratch(x, 2)
                    np.sqrt(v, out=denom)
                    denom += eps
                    tmp *= lr
                    np.multiply(tmp, bc2**0.5, out=tmp)
                    np.divide(tmp, denom, out=tmp)
                    tmp *= rect
                else:
                    tmp *= lr
                x -= tmp
                _bump(p)
        return loss
