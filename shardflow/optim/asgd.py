"""ASGD (averaged SGD, Polyak & Juditsky; PyTorch's single-tensor formulas, in place).

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    g = g + weight_decay * p
    p = p * (1 - lambd * eta) - eta * g
    ax = ax + mu * (p - ax)   (ax = p while mu == 1)
    eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)

``eta`` and ``mu`` are float32 scalars, as in PyTorch (their rounding shows in the result).
State: ``step``, ``eta``, ``mu``, ``ax`` (the running average of the parameter).
"""

from __future__ import annotations

import numpy as np

from ..autograd import _wrap
from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x = real_view(p.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["eta"] = _wrap(np.asarray(lr, dtype=np.float32))
                    st["mu"] = _wrap(np.ones((), dtype=np.float32))
                    st["ax"] = self._zeros_like(p)
                st["step"].array += 1
                t = float(st["step"].array)
                g = self._effective_grad(x, real_view(p.grad.array), group["weight_decay"], group["maximize"])
                eta, mu = st["eta"].array, st["mu"].array
                eta_value = float(eta)
                x *= 1 - lambd * eta_value
                tmp = self._scratch(x)
                np.multiply(g, eta_value, out=tmp)
                x -= tmp
                ax = real_view(st["ax"].array)
                if float(mu) != 1:
                    np.subtract(x, ax, out=tmp)
                    tmp *= float(mu)
                    ax += tmp
                else:
                    np.copyto(ax, x)
                eta[...] = lr / (1 + lambd * lr * t) ** alpha
                mu[...] = 1 / max(1, t - t0)
                _bump(p)
        return loss
