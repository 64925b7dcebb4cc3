"""Optimizer updates in one pass over flat C-contiguous arrays, in place (elements split
across cores). The formulas are PyTorch's single-tensor ones, as in ``optim/adam.py`` and
``optim/sgd.py`` (which keep the NumPy path):

Adam(W), per element, ``g`` negated when ``maximize``::

    x *= decay                                   (AdamW: 1 - lr * wd; 1 otherwise)
    g += l2 * x                                  (Adam's L2 penalty; 0 for AdamW)
    m += (1 - b1) (g - m);   v = b2 v + (1 - b2) g^2;   vmax = max(vmax, v) (amsgrad)
    x -= lr / bc1 * m / (sqrt(v or vmax) / bc2_sqrt + eps)

SGD::

    d = g + wd x;   buf = mom buf + (1 - damp) d   (buf = d on the first step)
    d = d + mom buf (nesterov) or buf;   x -= lr d

float32 parameters take ``_adam32`` / ``_sgd32``: each operation of PyTorch's float32 step
rounded to float32 as torch rounds it (plain float32 ``+ - * / sqrt``, IEEE-rounded without
fast-math, and ``fma(a, b, c)`` as ``a * b + c`` in float64 rounded once to float32: the
product of two float32 numbers is exact in float64), with
the fused multiply-adds of torch's CPU kernels: ``lerp`` (``m + w (g - m)`` fused),
``addcmul`` (``v b2 + ((1 - b2) g) g`` fused), ``add(alpha=)`` (``x + alpha y`` fused), and
``addcdiv`` as ``x + ((-step) m) / denom``. The formulas, and every scalar rounded to float32
first, are torch's: SGD's updates and Adam(W)'s with ``fused=True`` are its bits; its
default Adam(W) path takes ``sqrt`` from MKL (not correctly rounded: one float32 ulp off in
17% of the values), so those steps can differ by an ulp where the denominator does. Compiled
without fast-math (``kernel(exact=True)``).
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import kernel, prange


@kernel
def _adam(x, g, m, v, vmax, amsgrad, sign, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay):
    n = x.size
    step = lr / bc1  # once, outside the loop (see _adam32 on ``/``)
    for i in prange(n):
        xi = x[i] * decay
        gi = sign * g[i]
        if l2 != 0.0:  # not 0 * x: an inf parameter would become NaN (torch skips the term)
            gi += l2 * xi
        mi = m[i] + (1.0 - b1) * (gi - m[i])
        vi = b2 * v[i] + (1.0 - b2) * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad:
            if vi > vmax[i] or vi != vi:  # torch.maximum: a NaN wins
                vmax[i] = vi
            vi = vmax[i]
        x[i] = xi - np.divide(step * mi, np.divide(math.sqrt(vi), bc2_sqrt) + eps)


@kernel
def _sgd(x, g, buf, sign, wd, mom, damp, nesterov, first, lr):
    n = x.size
    for i in prange(n):
        d = sign * g[i]
        if wd != 0.0:  # not 0 * x: an inf parameter would become NaN (torch skips the term)
            d += wd * x[i]
        if mom != 0.0:
            if first:
                b = d
            else:
                b = mom * buf[i] + (1.0 - damp) * d
            buf[i] = b
            if nesterov:
                d = d + mom * b
            else:
                d = b
        x[i] = x[i] - lr * d


def _f32(v: float) -> float:
    """``v`` rounded to float32 (a torch scalar argument as the float32 kernel sees it)."""
    return float(np.float32(v))


@kernel(exact=True)
def _adam32(x, g, m, v, vmax, amsgrad, sign, l2, w, small, b2, c2, eps, bc2_sqrt, neg_step, decay):
    # float32 scalars once; a float32 op of two float32 values is IEEE-rounded (no
    # fast-math); only the fused multiply-adds go through float64 (the product is exact there)
    n = x.size
    s32, l2_32, w32, wm1 = np.float32(sign), np.float32(l2), np.float32(w), np.float32(w - 1.0)
    b2_32, c2_32, eps32 = np.float32(b2), np.float32(c2), np.float32(eps)
    bc32, step32, d32 = np.float32(bc2_sqrt), np.float32(neg_step), np.float32(decay)
    for i in prange(n):
        xi = x[i]
        if decay != 1.0:
            xi = xi * d32  # param.mul_(1 - lr * wd)
        gi = s32 * g[i]
        if l2 != 0.0:  # grad.add(param, alpha=wd): fused
            gi = np.float32(np.float64(xi) * l2_32 + np.float64(gi))
        mi = m[i]
        diff = gi - mi
        if small:  # lerp, weight < 0.5: m + w (g - m), fused
            mi = np.float32(np.float64(w32) * diff + np.float64(mi))
        else:  # weight >= 0.5: g + (w - 1)(g - m), fused
            mi = np.float32(np.float64(wm1) * diff + np.float64(gi))
        sg = c2_32 * gi  # addcmul: v b2 + ((1 - b2) g) g, fused
        vi = np.float32(np.float64(sg) * gi + np.float64(v[i] * b2_32))
        m[i] = mi
        v[i] = vi
        if amsgrad:
            if vi > vmax[i] or vi != vi:  # torch.maximum: a NaN wins
                vmax[i] = vi
            vi = vmax[i]
        # np.divide, not ``/``: numba checks every ``/`` for a zero divisor (to raise
        # ZeroDivisionError), which keeps the loop from vectorising (GPT-mini's 3.25M
        # parameters: 5.3 ns per element with ``/``, ~1 with np.divide; the same IEEE quotient)
        den = np.divide(np.sqrt(vi), bc32) + eps32
        x[i] = xi + np.divide(step32 * mi, den)


@kernel(exact=True)
def _sgd32(x, g, buf, sign, wd, mom, c_damp, damp, nesterov, first, neg_lr):
    n = x.size
    s32, wd32, mom32, cd32, lr32 = np.float32(sign), np.float32(wd), np.float32(mom), np.float32(c_damp), np.float32(neg_lr)
    for i in prange(n):
        xi = x[i]
        d = s32 * g[i]
        if wd != 0.0:  # grad.add(param, alpha=wd): fused
            d = np.float32(np.float64(xi) * wd32 + np.float64(d))
        if mom != 0.0:
            if first:
                b = d
            else:
                bm = buf[i] * mom32
                if damp != 0.0:  # buf.mul_(mom).add_(d, alpha=1 - damp): fused
                    b = np.float32(np.float64(d) * cd32 + np.float64(bm))
                else:
                    b = bm + d
            buf[i] = b
            if nesterov:  # d.add(buf, alpha=mom): fused
                d = np.float32(np.float64(b) * mom32 + np.float64(d))
            else:
                d = b
        x[i] = np.float32(np.float64(d) * lr32 + np.float64(xi))  # param.add_(d, alpha=-lr): fused

def adam_update(x, g, m, v, vmax, *, maximize, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay):
    """One Adam(W) step in place on same-shape arrays (``vmax`` None unless amsgrad)."""
    f = x.reshape(-1)
    vm = v.reshape(-1) if vmax is None else vmax.reshape(-1)
    if x.dtype == np.float32:
        w = _f32(1 - b1)
        _adam32(f, g.reshape(-1), m.reshape(-1), v.reshape(-1), vm, vmax is not None,
                -1.0 if maximize else 1.0, _f32(l2), w, w < 0.5, _f32(b2), _f32(1 - b2), _f32(eps),
                _f32(bc2_sqrt), _f32(-(lr / bc1)), _f32(decay))
        return
    _adam(f, g.reshape(-1), m.reshape(-1), v.reshape(-1), vm, vmax is not None,
          -1.0 if maximize else 1.0, float(l2), float(b1), float(b2), float(eps), float(bc1),
          float(bc2_sqrt), float(lr), float(decay))


def sgd_update(x, g, buf, *, maximize, wd, mom, damp, nesterov, first, lr):
    """One SGD step in place; ``buf`` the momentum buffer (any array when ``mom == 0``)."""
    f = x.reshape(-1)
    if x.dtype == np.float32:
        _sgd32(f, g.reshape(-1), (f if buf is None else buf.reshape(-1)), -1.0 if maximize else 1.0,
               _f32(wd), _f32(mom), _f32(1 - damp), float(damp), bool(nesterov), bool(first), _f32(-lr))
        return
    _sgd(f, g.reshape(-1), (f if buf is None else buf.reshape(-1)), -1.0 if maximize else 1.0,
         float(wd), float(mom), float(damp), bool(nesterov), bool(first), float(lr))
