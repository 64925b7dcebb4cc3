"""Adam and AdamW (PyTorch's single-tensor formulas, in place on raw arrays).

Per parameter, with ``t`` the step count and ``g`` the gradient (negated if ``maximize``)::

    Adam:  g = g + weight_decay * p            AdamW: p = p * (1 - lr * weight_decay)
    m = m + (1 - beta1) * (g - m)              (lerp, as PyTorch)
    v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)                      (amsgrad; v_max is used instead of v below)
    denom = sqrt(v) / sqrt(1 - beta2 ** t) + eps
    p = p - lr / (1 - beta1 ** t) * m / denom

``Adam(decoupled_weight_decay=True)`` is AdamW (torch 2.13); each param group keeps the flag
(``decoupled_weight_decay``, as torch's groups).

State: ``step`` (float32 scalar Tensor), ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq``.

Rounding is PyTorch's: float32 parameters (the Numba kernel ``kernels/optim.py``, or
``_adam_update_rounded``) and float16/bfloat16 ones (``_adam_update_rounded``) are stepped
op by op as torch's single-tensor step rounds them, with its fused multiply-adds, or in one
float32 pass with ``fused=True`` (torch's fused kernel): its bits, except that torch's
default float32 path takes ``sqrt`` from MKL (an ulp off a correctly rounded square root in
17% of values), so an entry's step can be an ulp apart there. float64 keeps its own order.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..kernels import cuda as _cuda_kernels
from ..kernels import optim as _optim_kernels
from ..ops.blocked import BLOCK_ELEMENTS, block_slices
from ._checks import check_nonnegative
from .optimizer import Optimizer, _bump, check_fused_dtypes, real_view


class Adam(Optimizer):
    _decoupled = False

    # zeros written as torch's signature writes them (int 0): print(optimizer) and the
    # state dict's param_groups show them so
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        # torch 2.13: Adam(decoupled_weight_decay=True) is AdamW (whose _decoupled is True)
        decoupled_weight_decay = bool(decoupled_weight_decay) or self._decoupled
        check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]} (expected [0, 1))")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]} (expected [0, 1))")
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure(closure)
        check_fused_dtypes(self)
        for group in self.param_groups:
            decoupled = group.get("decoupled_weight_decay", self._decoupled)
            lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
            wd, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                x, g = real_view(p.array), real_view(p.grad.array)  # complex: torch's view_as_real
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = self._step_tensor()
                    st["exp_avg"] = self._zeros_like(p)
                    st["exp_avg_sq"] = self._zeros_like(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = self._zeros_like(p)
                step_arr = st["step"].array
                step_arr += 1
                t = float(step_arr)
                m, v = real_view(st["exp_avg"].array), real_view(st["exp_avg_sq"].array)
                vmax = real_view(st["max_exp_avg_sq"].array) if amsgrad else None
                # one fused pass: Numba on the CPU (kernels/optim.py), CuPy on a GPU (kernels/cuda.py)
                fused = (_optim_kernels if kernels.usable(x, g, m, v, vmax)
                         else _cuda_kernels if _cuda_kernels.usable(x, g, m, v, vmax) else None)
                if fused is not None:
                    fused.adam_update(
                        x, g, m, v, vmax, maximize=maximize, l2=0.0 if decoupled else wd,
                        b1=b1, b2=b2, eps=eps, bc1=1 - b1**t, bc2_sqrt=math.sqrt(1 - b2**t),
                        lr=lr, decay=1 - lr * wd if decoupled else 1.0)
                    _bump(p)
                    continue
                decay = 1 - lr * wd if (wd != 0 and decoupled) else 1.0  # AdamW, applied per block
                coef = (b1, b2, eps, 1 - b1**t, math.sqrt(1 - b2**t), lr, decay)
                if x.dtype.kind in "fV" and x.dtype.itemsize <= 4 and type(x) is np.ndarray:
                    # float32 (not a kernel's arrays) and float16/bfloat16: torch's op-by-op steps
                    _adam_update_rounded(x, g, m, v, vmax, coef, 0.0 if decoupled else wd, maximize,
                                         fused=bool(group.get("fused")))
                    _bump(p)
                    continue
                adjust = maximize or (wd != 0 and not decoupled)
                if _blockable(x, g, m, v, vmax):  # block-sized temporaries, whatever the size
                    tmp = self._flat_scratch(BLOCK_ELEMENTS, x.dtype)
                    gg = self._flat_scratch(BLOCK_ELEMENTS, x.dtype, 1) if adjust else None
                    flat = [None if a is None else a.reshape(-1) for a in (x, g, m, v, vmax)]
                    for b in block_slices(x.size):
                        xb, gb, mb, vb, vmb = (None if a is None else a[b] for a in flat)
                        k = b.stop - b.start
                        tb = tmp[:k]
                        if adjust:
                            gb = _effective_grad_block(xb, gb, gg[:k], tb, wd, decoupled, maximize)
                        _adam_update(xb, gb, mb, vb, vmb, tb, coef)
                else:  # CuPy or strided arrays: whole-array temporaries
                    tmp = self._scratch(x)
                    if adjust:
                        g = _effective_grad_block(x, g, self._scratch(x, 1), tmp, wd, decoupled,
                                                  maximize)
                    _adam_update(x, g, m, v, vmax, tmp, coef)
                _bump(p)
        return loss


def _adam_update(x, g, m, v, vmax, tmp, coef):
    """One Adam(W) step on matching (blocks of) arrays, in place, without allocating."""
    b1, b2, eps, bc1, bc2_sqrt, lr, decay = coef
    if decay != 1.0:
        x *= decay
    np.subtract(g, m, out=tmp)  # m.lerp_(g, 1 - b1)
    tmp *= 1 - b1
    m += tmp
    v *= b2
    np.multiply(g, g, out=tmp)
    tmp *= 1 - b2
    v += tmp
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
        np.sqrt(vmax, out=tmp)
    else:
        np.sqrt(v, out=tmp)
    tmp /= bc2_sqrt
    tmp += eps
    np.divide(m, tmp, out=tmp)
    tmp *= lr / bc1
    x -= tmp


def _fma32(a, b, c):
    """``a * b + c`` in float32 rounded once (float32 operands: the float64 product is exact)."""
    return (np.multiply(a, b, dtype=np.float64) + c).astype(np.float32)


def _adam_update_rounded(x, g, m, v, vmax, coef, l2, maximize, fused=False):
    """One Adam(W) step on float32 or float16/bfloat16 arrays as PyTorch's single-tensor step
    rounds it: each tensor op computed in float32 (its opmath type) and rounded to the
    parameter's dtype, with the fused multiply-adds of its CPU kernels (``lerp``,
    ``addcmul``, ``add(alpha=)``) and its scalar rules (a number added to a 2-byte tensor is
    rounded to its dtype first: ``eps`` = 1e-8 is 0 in float16, as in torch). The float32
    Numba kernel (``kernels/optim.py``) computes the same. ``fused`` (``Adam(fused=True)``):
    torch's fused kernel computes the whole step in float32 and rounds the parameter and the
    two moments once."""
    b1, b2, eps, bc1, bc2_sqrt, lr, decay = coef
    dt, f32 = x.dtype, np.float32
    half = dt.itemsize == 2 and not fused

    def rnd(a):
        return a.astype(dt).astype(f32) if half else a.astype(f32, copy=False)

    def num(a):  # a number as the op takes it: rounded to a 2-byte tensor's dtype first
        return f32(dt.type(a)) if half else f32(a)

    x32, m32, v32 = x.astype(f32), m.astype(f32), v.astype(f32)
    g32 = -g.astype(f32) if maximize else g.astype(f32)
    if decay != 1.0:
        x32 = rnd(x32 * f32(decay))
    if l2 != 0:
        g32 = rnd(_fma32(x32, np.float64(num(l2)), g32))
    w = f32(1 - b1)  # lerp: one op, its difference and product in float32
    if w < 0.5:
        m32 = rnd(_fma32(w, g32 - m32, m32))
    else:
        m32 = rnd(_fma32(f32(w - 1), g32 - m32, g32))
    v32 = rnd(_fma32(f32(1 - b2) * g32, g32, rnd(v32 * f32(b2))))  # mul_, then addcmul_
    m[...] = m32.astype(dt)
    v[...] = v32.astype(dt)
    if vmax is not None:  # fused: the float32 maximum is the denominator's, then rounded
        v32 = np.maximum(vmax.astype(f32), v32)
        vmax[...] = v32.astype(dt)
        v32 = rnd(v32)
    den = rnd(rnd(np.sqrt(v32)) / f32(bc2_sqrt))
    den = rnd(den + num(eps))
    with np.errstate(divide="ignore", invalid="ignore"):  # float16's eps is 0, as torch's
        x[...] = (x32 + (f32(-(lr / bc1)) * m32) / den).astype(dt)  # addcdiv_: one op


def _blockable(*arrays) -> bool:
    """Every array (None entries skipped) a C-contiguous NumPy array: the update then runs
    on flat cache-sized blocks (``ops/blocked.py`` explains why) with block-sized
    temporaries, so the scratch is one block per dtype, not one array per parameter shape
    (8.4 MB of a 10x GPT's AdamW on 2 ranks, kept for the optimizer's life)."""
    return all(a is None or (type(a) is np.ndarray and a.flags.c_contiguous) for a in arrays)


def _effective_grad_block(x, g, out, tmp, wd, decoupled, maximize):
    """``-g if maximize else g``, plus ``wd * x`` for Adam's L2 penalty, into ``out``."""
    np.negative(g, out=out) if maximize else np.copyto(out, g)
    if wd != 0 and not decoupled:  # L2 penalty folded into the gradient
        np.multiply(x, wd, out=tmp)
        out += tmp
    return out


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * wd`` first."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)
