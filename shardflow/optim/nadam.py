"""NAdam (Dozat 2016, PyTorch's single-tensor formulas, in place on raw arrays).

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    p = p * (1 - lr * weight_decay)     (decoupled_weight_decay)   else  g = g + weight_decay * p
    mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  mu_{t+1} likewise
    mu_product = mu_product * mu_t      (a float32 scalar, as PyTorch keeps it)
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2 ** t)) + eps
    p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
          - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

State: ``step``, ``mu_product`` (float32 scalars), ``exp_avg``, ``exp_avg_sq``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import _wrap
from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            wd, md = group["weight_decay"], group["momentum_decay"]
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x = real_view(p.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["mu_product"] = _wrap(np.ones((), dtype=np.float32))
                    st["exp_avg"] = self._zeros_like(p)
                    st["exp_avg_sq"] = self._zeros_like(p)
                st["step"].array += 1
                t = float(st["step"].array)
                if wd != 0 and decoupled:
                    x *= 1 - lr * wd
                g = self._effective_grad(x, real_view(p.grad.array), 0 if decoupled else wd,
                                         group["maximize"])
                mu = b1 * (1.0 - 0.5 * 0.96 ** (t * md))
                mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
                mu_product = st["mu_product"].array
                mu_product *= mu
                mp = float(mu_product)
                m, v = real_view(st["exp_avg"].array), real_view(st["exp_avg_sq"].array)
                tmp = self._scratch(x)
                np.subtract(g, m, out=tmp)  # m.lerp_(g, 1 - b1)
                tmp *= 1 - b1
                m += tmp
                v *= b2
                np.multiply(g, g, out=tmp)
                tmp *= 1 - b2
                v += tmp
                denom = self._scratch(x, 2)
                np.divide(v, 1 - b2**t, out=denom)
                np.sqrt(denom, out=denom)
                denom += eps
                np.divide(g, denom, out=tmp)
                tmp *= -lr * (1.0 - mu) / (1.0 - mp)
                x += tmp
                np.divide(m, denom, out=tmp)
                tmp *= -lr * mu_next / (1.0 - mp * mu_next)
                x += tmp
                _bump(p)
        return loss
