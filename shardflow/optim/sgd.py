"""SGD with momentum, dampening, Nesterov, weight decay and ``maximize`` (PyTorch's formulas).

Per parameter (``g`` = grad, negated when ``maximize``)::

    g = g + weight_decay * p
    buf = g (first step)  or  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (nesterov)  or  g = buf
    p = p - lr * g

State: ``momentum_buffer`` (only when momentum != 0). Updates are in place on raw arrays.
float32 and float16/bfloat16 parameters are stepped as PyTorch's single-tensor (and fused)
step rounds them, op by op with its fused multiply-adds (``kernels/optim.py``,
``_sgd_update_rounded``): its bits. float64 keeps its own order.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..kernels import optim as _optim_kernels
from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, check_fused_dtypes, required
from .sparse_steps import sgd_sparse_step


class SGD(Optimizer):
    _sparse_grads_ok = True  # sparse gradients: sparse_steps.py
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
        check_fused_dtypes(self)
        for group in self.param_groups:
            lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:  # Embedding(sparse=True): only its rows (sparse_steps.py)
                    sgd_sparse_step(self, p, p.grad, lr, mom, damp, wd, nesterov, maximize)
                    _bump(p)
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
                if x.dtype.kind in "fV" and x.dtype.itemsize <= 4 and type(x) is np.ndarray:
                    # float32 (not a kernel's arrays) and float16/bfloat16: torch's op-by-op steps
                    st = self.state[p]
                    _sgd_update_rounded(self, p, x, g, st, lr, mom, damp, wd, nesterov, maximize)
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


def _fma32(a, b, c):
    """``a * b + c`` in float32 rounded once (float32 operands: the float64 product is exact)."""
    return (np.multiply(a, b, dtype=np.float64) + c).astype(np.float32)


def _sgd_update_rounded(opt, p, x, g, st, lr, mom, damp, wd, nesterov, maximize):
    """One SGD step on float32 or float16/bfloat16 arrays as PyTorch's single-tensor step
    rounds it: each tensor op in float32 (opmath) rounded to the parameter's dtype, each
    ``add(..., alpha=a)`` one fused multiply-add with ``a`` first rounded to that dtype (as
    torch's add kernel takes it). The float32 Numba kernel (``kernels/optim.py``) computes
    the same."""
    dt, f32 = x.dtype, np.float32
    half = dt.itemsize == 2

    def rnd(a):
        return a.astype(dt).astype(f32) if half else a.astype(f32, copy=False)

    def alpha(a):
        return np.float64(f32(dt.type(a)) if half else f32(a))

    d = -g.astype(f32) if maximize else g.astype(f32)
    if wd != 0:
        d = rnd(_fma32(x.astype(f32), alpha(wd), d))
    if mom != 0:
        buf = st.get("momentum_buffer")
        if buf is None:
            b = d
            st["momentum_buffer"] = opt._state_like(p, d.astype(dt))
        else:
            bm = rnd(buf.array.astype(f32) * f32(mom))
            b = rnd(_fma32(d, alpha(1 - damp), bm)) if damp != 0 else rnd(bm + d)
            buf.array[...] = b.astype(dt)
        d = rnd(_fma32(b, alpha(mom), d)) if nesterov else b
    x[...] = _fma32(d, alpha(-lr), x.astype(f32)).astype(dt)
