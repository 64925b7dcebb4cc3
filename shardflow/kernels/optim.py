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
"""

from __future__ import annotations

import math

from ._numba import kernel, prange


@kernel
def _adam(x, g, m, v, vmax, amsgrad, sign, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay):
    n = x.size
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
        x[i] = xi - (lr / bc1) * mi / (math.sqrt(vi) / bc2_sqrt + eps)


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


def adam_update(x, g, m, v, vmax, *, maximize, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay):
    """One Adam(W) step in place on same-shape arrays (``vmax`` None unless amsgrad)."""
    f = x.reshape(-1)
    vm = v.reshape(-1) if vmax is None else vmax.reshape(-1)
    _adam(f, g.reshape(-1), m.reshape(-1), v.reshape(-1), vm, vmax is not None,
          -1.0 if maximize else 1.0, float(l2), float(b1), float(b2), float(eps), float(bc1),
          float(bc2_sqrt), float(lr), float(decay))


def sgd_update(x, g, buf, *, maximize, wd, mom, damp, nesterov, first, lr):
    """One SGD step in place; ``buf`` the momentum buffer (any array when ``mom == 0``)."""
    f = x.reshape(-1)
    _sgd(f, g.reshape(-1), (f if buf is None else buf.reshape(-1)), -1.0 if maximize else 1.0,
         float(wd), float(mom), float(damp), bool(nesterov), bool(first), float(lr))
