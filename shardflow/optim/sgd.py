"""SGD with momentum, dampening, Nesterov, weight decay and ``maximize`` (PyTorch's formulas).

Per parameter (``g`` = grad, negated when ``maximize``)::

    g = g + weight_decay * p
    buf = g (first step)  or  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (nesterov)  or  g = buf
    p = p - lr * g

State: ``momentum_buffer`` (only when momentum != 0). Updates are in place on raw arrays.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..kernels import optim as _optim_kernels
from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, required


class SGD(Optimizer):
    # zeros written as torch's signature writes them (int 0): print(optimizer) and the
    # state dict's param_groups show them so
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr is not required:
            check_nonnegative(lr=lr)
        check_nonnegative(momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x, g = p.array, p.grad.array
                if kernels.usable(x, g):  # one Numba pass (kernels/optim.py)
                    buf = None
                    first = False
                    if mom != 0:
                        st = self.state[p]
                        if st.get("momentum_buffer") is None:
                            st["momentum_buffer"] = self._state_like(p, np.empty_like(x))
                            first = True
                        buf = st["momentum_buffer"].array
                    if buf is None or kernels.usable(x, buf):
                        _optim_kernels.sgd_update(x, g, buf, maximize=maximize, wd=wd, mom=mom,
                                                  damp=damp, nesterov=nesterov, first=first, lr=lr)
                        _bump(p)
                        continue
                d = g  # the update direction; `own` says whether it is a scratch buffer
                own = False
                if wd != 0 or maximize:
                    d, own = self._scratch(x), True
                    if wd != 0:
                        np.multiply(x, wd, out=d)
                        np.subtract(d, g, out=d) if maximize else np.add(d, g, out=d)
                    else:
                        np.negative(g, out=d)
                if mom != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = self._state_like(p, d.copy())
                    else:
                        b = buf.array
                        b *= mom
                        if damp != 0:
                            t = self._scratch(x, 1)
                            np.multiply(d, 1 - damp, out=t)
                            b += t
                        else:
                            b += d
                    if nesterov:  # d = d + momentum * buf
                        t = self._scratch(x, 1)
                        np.multiply(buf.array, mom, out=t)
                        np.add(d, t, out=t)
                        d, own = t, True
                    else:
                        d, own = buf.array, False
                if lr != 1:
                    out = d if own else self._scratch(x)
                    np.multiply(d, lr, out=out)
                    d = out
                x -= d
                _bump(p)
        return loss
