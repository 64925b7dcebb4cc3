"""SparseAdam: Adam for sparse (COO) gradients, as ``torch.optim.SparseAdam`` (the lazy
variant: only the moments and parameter entries a gradient touches are updated).

Per parameter, ``t`` the step count; with the gradient coalesced to entries ``i`` and
values ``g`` (negated if ``maximize``)::

    m[i] = m[i] + (1 - beta1) * (g - m[i]);  v[i] = v[i] + (1 - beta2) * (g * g - v[i])
    p[i] = p[i] - lr * sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m[i] / (sqrt(v[i]) + eps)

A dense gradient raises, as in PyTorch (use Adam). State: ``step`` (a Python int, as
PyTorch), ``exp_avg``, ``exp_avg_sq``.
"""

from __future__ import annotations

import math

from .optimizer import Optimizer, _bump


class SparseAdam(Optimizer):
    _sparse_grads_ok = True
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr} (expected lr > 0)")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps} (expected eps > 0)")
        for i, beta in enumerate(betas[:2]):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta} (expected [0, 1))")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        sparse, complex_ = [], []
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse.append([gi, pi])
                if p.is_complex():
                    complex_.append([gi, pi])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             "parameter tensors")
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not "
                             "support complex parameters")

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead (in shardflow an Embedding(sparse=True) "
                                       "wrapped by DistributedDataParallel or FSDP, or whose weight has a "
                                       "post-accumulate-grad hook, gets a dense gradient: step it with Adam)")
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = 0
                    st["exp_avg"] = self._zeros_like(p)
                    st["exp_avg_sq"] = self._zeros_like(p)
                st["step"] += 1
                grad = p.grad.coalesce()
                values = grad._values().array
                if values.size == 0:
                    continue
                if group["maximize"]:
                    values = -values
                idx = tuple(grad._indices().array)  # one index array per sparse dim
                m, v, x = st["exp_avg"].array, st["exp_avg_sq"].array, p.array
                old_m, old_v = m[idx], v[idx]
                m_update = (values - old_m) * (1 - b1)
                v_update = (values * values - old_v) * (1 - b2)
                m[idx] += m_update
                v[idx] += v_update
                numer = m_update + old_m
                denom = (v_update + old_v) ** 0.5 + eps
                t = st["step"]
                step_size = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
                x[idx] += -step_size * (numer / denom)
                _bump(p)
        return loss
