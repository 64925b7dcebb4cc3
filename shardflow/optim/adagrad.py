"""Adagrad (PyTorch's formulas, in place on raw arrays).

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    g = g + weight_decay * p
    clr = lr / (1 + (t - 1) * lr_decay)
    sum = sum + g * g
    p = p - clr * g / (sqrt(sum) + eps)

State (created at construction, as in PyTorch): ``step``, ``sum`` (filled with
``initial_accumulator_value``).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, check_fused_dtypes, real_view
from .sparse_steps import adagrad_sparse_step


class Adagrad(Optimizer):
    _sparse_grads_ok = True  # sparse gradients: sparse_steps.py
    # zeros written as torch's signature writes them (int 0): print(optimizer) and the
    # state dict's param_groups show them so
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group) -> None:
        st = self.state[p]
        st["step"] = self._step_tensor()
        v = group["initial_accumulator_value"]
        if p.array.dtype.kind == "c":  # torch: complex(v, v), both parts' accumulators start at v
            v = complex(v, v)
        st["sum"] = self._state_like(p, np.full_like(p.array, v))

    def step(self, closure=None):
        loss = self._closure(closure)
        check_fused_dtypes(self)
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse and wd != 0:  # refused before the step count moves
                    raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                st = self.state[p]
                if len(st) == 0:  # a group added after construction
                    self._init_state(p, group)
                step_arr = st["step"].array
                step_arr += 1
                t = float(step_arr)
                if p.grad.is_sparse:  # Embedding(sparse=True): only its rows (sparse_steps.py)
                    adagrad_sparse_step(p, p.grad, st, lr / (1 + (t - 1) * lr_decay), eps, maximize)
                    _bump(p)
                    continue
                x, g = real_view(p.array), real_view(p.grad.array)  # complex: torch's view_as_real
                g = self._effective_grad(x, g, wd, maximize)
                clr = lr / (1 + (t - 1) * lr_decay)
                s = real_view(st["sum"].array)
                tmp = self._scratch(x)
                np.multiply(g, g, out=tmp)
                s += tmp
                np.sqrt(s, out=tmp)
                tmp += eps
                np.divide(g, tmp, out=tmp)
                tmp *= clr
                x -= tmp
                _bump(p)
        return loss
