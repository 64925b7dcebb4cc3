"""RMSprop (PyTorch's formulas, in place on raw arrays).

Per parameter (``g`` negated if ``maximize``)::

    g = g + weight_decay * p
    sq = alpha * sq + (1 - alpha) * g * g
    centered: ga = ga + (1 - alpha) * (g - ga);  avg = sqrt(sq - ga * ga) + eps
    else:     avg = sqrt(sq) + eps
    momentum > 0: buf = momentum * buf + g / avg;  p = p - lr * buf
    else:         p = p - lr * g / avg

State: ``step``, ``square_avg``, ``momentum_buffer`` (momentum > 0), ``grad_avg`` (centered).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class RMSprop(Optimizer):
    # zeros written as torch's signature writes them (int 0): print(optimizer) and the
    # state dict's param_groups show them so
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
            mom, centered, maximize = group["momentum"], group["centered"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x, g = real_view(p.array), real_view(p.grad.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["square_avg"] = self._zeros_like(p)
                    if mom > 0:
                        st["momentum_buffer"] = self._zeros_like(p)
                    if centered:
                        st["grad_avg"] = self._zeros_like(p)
                st["step"].array += 1
                g = self._effective_grad(x, g, wd, maximize)
                sq = real_view(st["square_avg"].array)
                avg = self._scratch(x)
                sq *= alpha
                np.multiply(g, g, out=avg)
                avg *= 1 - alpha
                sq += avg
                if centered:
                    ga = real_view(st["grad_avg"].array)
                    np.subtract(g, ga, out=avg)  # ga.lerp_(g, 1 - alpha)
                    avg *= 1 - alpha
                    ga += avg
                    np.multiply(ga, ga, out=avg)
                    np.subtract(sq, avg, out=avg)
                    np.sqrt(avg, out=avg)
                else:
                    np.sqrt(sq, out=avg)
                avg += eps
                if mom > 0:
                    buf = real_view(st["momentum_buffer"].array)
                    buf *= mom
                    np.divide(g, avg, out=avg)
                    buf += avg
                    np.multiply(buf, lr, out=avg)
                else:
                    np.divide(g, avg, out=avg)
                    avg *= lr
                x -= avg
                _bump(p)
        return loss
