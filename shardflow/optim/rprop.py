"""Rprop (resilient backpropagation; PyTorch's single-tensor formulas, in place).

Per parameter (``g`` negated if ``maximize``), elementwise with ``s = sign(g * prev)``::

    factor = etaplus where s > 0, etaminus where s < 0, 1 where s == 0
    step_size = clamp(step_size * factor, step_size_min, step_size_max)
    g = 0 where s < 0               (a sign change: skip this step, forget the gradient)
    p = p - sign(g) * step_size;  prev = g

State: ``step``, ``prev`` (zeros), ``step_size`` (filled with ``lr`` at the first step).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, real_view


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]} (expected 0 < etaminus "
                             "< 1 < etaplus)")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x = p.array
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["prev"] = self._zeros_like(p)
                    # complex: the real and imaginary parts are two entries, each starting at lr
                    lr0 = complex(group["lr"], group["lr"]) if x.dtype.kind == "c" else group["lr"]
                    st["step_size"] = self._state_like(p, np.full_like(x, lr0))
                st["step"].array += 1
                x = real_view(x)  # complex: torch's view_as_real (after the state is made)
                g = self._scratch(x, 1)
                grad = real_view(p.grad.array)
                np.negative(grad, out=g) if group["maximize"] else np.copyto(g, grad)
                prev, step_size = real_view(st["prev"].array), real_view(st["step_size"].array)
                factor = self._scratch(x)
                np.multiply(g, prev, out=factor)
                np.sign(factor, out=factor)
                flipped = factor < 0
                factor[factor > 0] = etaplus
                factor[flipped] = etaminus
                factor[factor == 0] = 1
                step_size *= factor
                np.clip(step_size, lo, hi, out=step_size)
                g[flipped] = 0
                np.sign(g, out=factor)
                factor *= step_size
                x -= factor
                np.copyto(prev, g)
                _bump(p)
        return loss
