"""Element-wise dropout in one pass: keep mask and output together, backward reusing the mask.

The uniform draws come from the caller (torch's 53-bit uniforms, ``backend/random_stream.py``;
kept where ``u < 1 - p``, torch's ``bernoulli_(1 - p)``), so the random stream, ``manual_seed``
reproducibility and checkpoint recomputation are exactly the NumPy path's. The NumPy path then
makes four passes: ``u < 1 - p``, the cast of the bool mask to
the input's dtype, the ``* 1/(1-p)`` scaling and ``x * mask``, and keeps a float mask (4 or 8
bytes per element) for backward. The kernel reads ``u`` and ``x`` once, writes ``y`` and a
1-byte keep mask; backward is one pass ``g * (keep ? scale : 0)``. Values are the NumPy
path's bit for bit: both compute ``x * scale`` or ``x * 0``.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, prange


@kernel
def _fwd(x, u, q, scale, y, keep):
    n = x.size
    zero = x[0] * 0
    for i in prange(n):
        k = u[i] < q
        keep[i] = k
        y[i] = x[i] * (scale if k else zero)


@kernel
def _bwd(g, keep, scale, gx):
    n = g.size
    zero = g[0] * 0
    for i in prange(n):
        gx[i] = g[i] * (scale if keep[i] else zero)


def dropout_forward(x, u, p):
    """(y, keep) for ``x`` and float64 uniforms ``u`` (one per element, flat): keep where
    ``u < 1 - p``; kept values times ``1 / (1 - p)`` computed in ``x``'s dtype (torch's)."""
    dt = x.dtype
    y = np.empty(x.shape, dt)
    keep = np.empty(x.shape, np.bool_)
    _fwd(x.reshape(-1), u.reshape(-1), np.float64(1.0 - p), dt.type(1) / dt.type(1.0 - p), y.reshape(-1),
         keep.reshape(-1))
    return y, keep


def dropout_backward(g, keep, p):
    gx = np.empty(g.shape, g.dtype)
    _bwd(g.reshape(-1), keep.reshape(-1), g.dtype.type(1) / g.dtype.type(1.0 - p), gx.reshape(-1))
    return gx
