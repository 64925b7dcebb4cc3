"""Adafactor (Shazeer & Stern 2018) as ``torch.optim.Adafactor`` computes it (torch 2.13),
in place on raw arrays.

Per parameter, ``t`` the step count (``g`` negated if ``maximize``)::

    beta2_t = 1 - t ** beta2_decay;  rho_t = min(lr, 1 / sqrt(t))
    alpha = max(eps2, ||p|| / sqrt(numel)) * rho_t          (before weight decay)
    p = p * (1 - lr * weight_decay)                           (decoupled)
    ndim >= 2:  row_var = lerp(row_var, mean(g^2, -1), 1 - beta2_t)     (..., R, 1)
                col_var = lerp(col_var, mean(g^2, -2), 1 - beta2_t)     (..., 1, C)
                var = row_var @ col_var / max(mean(row_var, -2), eps1)  (the factored estimate)
    else:       variance = lerp(variance, g^2, 1 - beta2_t);  var = variance
    update = g / sqrt(max(var, eps1^2))
    p = p - alpha / max(1, ||update|| / (sqrt(numel) * d)) * update

``eps1=None`` is the parameter dtype's machine epsilon. State: ``step``, and ``row_var`` /
``col_var`` (matrices and higher) or ``variance`` (vectors and scalars). Norms are of the
local array: a sharded (global) parameter is refused, since its norm needs every shard.
"""

from __future__ import annotations

import numpy as np

from ..autograd import _wrap
from ..backend import get_array_module
from ._lerp import lerp_
from .optimizer import Optimizer, _bump


class Adafactor(Optimizer):
    _param_shaped_state = ("variance",)  # row_var / col_var have a reduced shape

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        if any(p.grad is not None and p.array.dtype.kind == "c"
               for group in self.param_groups for p in group["params"]):
            raise RuntimeError("Adafactor does not support complex parameters")  # before any update
        for group in self.param_groups:
            lr, decay, d, wd = group["lr"], group["beta2_decay"], group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p._spec is not None:
                    raise NotImplementedError(
                        "Adafactor on a global (sharded) parameter is not supported: its "
                        "parameter and update norms need every shard; use AdamW, or call "
                        "Adafactor on local parameters")
                x = p.array
                xp = get_array_module(x)
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    if x.ndim > 1:
                        st["row_var"] = _wrap(xp.zeros((*x.shape[:-1], 1), dtype=x.dtype))
                        st["col_var"] = _wrap(xp.zeros((*x.shape[:-2], 1, x.shape[-1]),
                                                       dtype=x.dtype))
                    else:
                        st["variance"] = self._zeros_like(p)
                st["step"].array += 1
                t = float(st["step"].array)
                e1 = float(np.finfo(x.dtype).eps) if eps1 is None else eps1
                one_minus_beta2_t = t**decay
                rho_t = min(lr, 1 / t**0.5)
                alpha = max(eps2, float(_l2(x)) / x.size**0.5) * rho_t
                if wd != 0:
                    x *= 1 - lr * wd
                g = self._effective_grad(x, p.grad.array, 0, group["maximize"])
                g2 = np.multiply(g, g, out=xp.empty_like(x))  # (0-d stays an array)
                if x.ndim > 1:
                    row_var, col_var = st["row_var"].array, st["col_var"].array
                    lerp_(row_var, g2.sum(axis=-1, keepdims=True) / x.shape[-1], one_minus_beta2_t,
                          xp.empty_like(row_var))
                    lerp_(col_var, g2.sum(axis=-2, keepdims=True) / x.shape[-2], one_minus_beta2_t,
                          xp.empty_like(col_var))
                    var = xp.matmul(row_var, col_var)  # (..., R, C)
                    var /= xp.maximum(row_var.mean(axis=-2, keepdims=True), e1)
                else:
                    variance = st["variance"].array
                    lerp_(variance, g2, one_minus_beta2_t, xp.empty_like(variance))
                    var = variance.copy()
                np.maximum(var, e1 * e1, out=var)
                update = g2  # reuse: update = g / sqrt(var)
                np.sqrt(var, out=update)
                np.divide(g, update, out=update)
                denom = max(1.0, float(_l2(update)) / (update.size**0.5 * d))
                update *= -alpha / denom
                x += update
                _bump(p)
        return loss


def _l2(a):
    flat = a.reshape(-1)
    return np.sqrt(np.dot(flat, flat))
