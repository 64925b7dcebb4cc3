"""Row softmax kernels over the last dim of C-contiguous 2-D arrays (rows split across cores).

* ``softmax``: ``y = exp(x - max) / sum(exp(x - max))`` (subnormal results flushed to 0,
  as ``ops/_util.flush_subnormal_``); backward ``gx = y (g - sum(g y))``.
* ``log_softmax``: ``y = x - max - log(sum(exp(x - max)))``; backward ``gx = g - exp(y) sum(g)``.
* ``cross_entropy`` (class indices, no label smoothing): per row ``e = exp(x - max)``,
  ``s = sum(e)``, ``loss = log(s) - (x_t - max)``; ``e`` and ``s`` are kept for the backward
  ``gx = e * scale - [c = t] tgt`` (``scale``, ``tgt`` per row from ops/loss.py).
* attention: ``attn_softmax_(A, row0, causal, scale)`` turns scores (rows, keys) into
  probabilities ``softmax(A * scale)`` in place; with ``causal``, row ``i`` (global query row
  ``row0 + i % rows_per_head``) sees keys ``j <= row`` (top-left tril); a row that sees no key
  becomes zeros; keys a row does not see are set to 0 (never read: the caller need not
  compute them). Backward ``attn_softmax_backward_(gP, P, row0, causal, scale)``:
  ``gP = scale P (gP - sum(gP P))`` in place (the gradient w.r.t. the unscaled scores), the
  same keys per row, the others set to 0.
Sums accumulate in float64. ``exp`` of the (non-positive) shifted scores is
``_math.exp_neg`` for float32 arrays (vectorised; libm's per-element ``exp`` made these
kernels no faster than NumPy's SIMD ufuncs) and libm for float64.
"""

from __future__ import annotations

import math

import numpy as np

from ._math import exp_le0
from ._numba import kernel, prange


@kernel
def _softmax_fwd(x, y, log, tiny, exact):
    M, N = x.shape
    for i in prange(M):
        mx = -np.inf
        for j in range(N):
            if x[i, j] > mx:
                mx = x[i, j]
        s = 0.0
        for j in range(N):
            e = exp_le0(x[i, j] - mx, exact)
            y[i, j] = e
            s += e
        if log:
            lse = mx + math.log(s)
            for j in range(N):
                y[i, j] = x[i, j] - lse
        else:
            inv = 1.0 / s
            for j in range(N):
                v = y[i, j] * inv
                y[i, j] = 0.0 if v < tiny else v


@kernel
def _softmax_bwd(g, y, gx, log, tiny, exact):
    M, N = y.shape
    for i in prange(M):
        s = 0.0
        if log:
            for j in range(N):
                s += g[i, j]
            for j in range(N):
                v = g[i, j] - exp_le0(y[i, j], exact) * s
                gx[i, j] = 0.0 if abs(v) < tiny else v
        else:
            for j in range(N):
                s += g[i, j] * y[i, j]
            for j in range(N):
                v = y[i, j] * (g[i, j] - s)
                gx[i, j] = 0.0 if abs(v) < tiny else v


@kernel
def _ce_fwd(x, t, e, s, loss, exact):
    M, N = x.shape
    for i in prange(M):
        mx = -np.inf
        for j in range(N):
            if x[i, j] > mx:
                mx = x[i, j]
        acc = 0.0
        for j in range(N):
            v = exp_le0(x[i, j] - mx, exact)
            e[i, j] = v
            acc += v
        s[i] = acc
        loss[i] = math.log(acc) - (x[i, t[i]] - mx)


@kernel
def _ce_bwd(e, scale, t, tgt, gx, tiny):
    M, N = e.shape
    for i in prange(M):
        k = scale[i]
        for j in range(N):
            v = e[i, j] * k
            gx[i, j] = 0.0 if abs(v) < tiny else v
        v = gx[i, t[i]] - tgt[i]
        gx[i, t[i]] = 0.0 if abs(v) < tiny else v


@kernel
def _attn_fwd(A, row0, rows_per_head, causal, scale, tiny, exact):
    M, N = A.shape
    for i in prange(M):
        kmax = N
        if causal:
            kmax = min(N, row0 + i % rows_per_head + 1)
        mx = -np.inf
        for j in range(kmax):
            a = A[i, j] * scale
            if a > mx:
                mx = a
        s = 0.0
        for j in range(kmax):
            e = exp_le0(A[i, j] * scale - mx, exact)
            A[i, j] = e
            s += e
        inv = 1.0 / s if s > 0.0 else 0.0
        for j in range(kmax):
            v = A[i, j] * inv
            A[i, j] = 0.0 if v < tiny else v
        for j in range(kmax, N):
            A[i, j] = 0.0


@kernel
def _attn_bwd(gP, P, row0, rows_per_head, causal, scale, tiny):
    M, N = P.shape
    for i in prange(M):
        kmax = N
        if causal:
            kmax = min(N, row0 + i % rows_per_head + 1)
        s = 0.0
        for j in range(kmax):
            s += gP[i, j] * P[i, j]
        for j in range(kmax):
            v = P[i, j] * (gP[i, j] - s) * scale
            gP[i, j] = 0.0 if abs(v) < tiny else v
        for j in range(kmax, N):
            gP[i, j] = 0.0


def _exact(a):
    """libm ``exp`` for float64 arrays; ``_math.exp_neg`` (vectorised, float32-exact) else."""
    return a.dtype == np.float64


def _tiny(a):
    return float(np.finfo(a.dtype).tiny)


def softmax_forward(x2, log=False):
    """softmax (or log_softmax) of each row of ``x2`` (M, N)."""
    y = np.empty(x2.shape, x2.dtype)
    _softmax_fwd(x2, y, bool(log), _tiny(x2), _exact(x2))
    return y


def softmax_backward(g2, y2, log=False):
    gx = np.empty(y2.shape, y2.dtype)
    _softmax_bwd(g2, y2, gx, bool(log), _tiny(y2), _exact(y2))
    return gx


def cross_entropy_forward(x2, t):
    """(e, s, loss) for logits ``x2`` (M, C) and int64 targets ``t`` (M,) in range."""
    M = x2.shape[0]
    e = np.empty(x2.shape, x2.dtype)
    s = np.empty(M, x2.dtype)
    loss = np.empty(M, x2.dtype)
    _ce_fwd(x2, np.ascontiguousarray(t, dtype=np.int64), e, s, loss, _exact(x2))
    return e, s, loss


def cross_entropy_backward(e, scale, t, tgt):
    """``gx = e * scale[:, None]`` minus ``tgt`` at each row's target (all (M,) rows)."""
    gx = np.empty(e.shape, e.dtype)
    _ce_bwd(e, np.ascontiguousarray(scale, e.dtype), np.ascontiguousarray(t, np.int64),
            np.ascontiguousarray(tgt, e.dtype), gx, _tiny(e))
    return gx


def attn_softmax_(A, row0=0, causal=False, scale=1.0):
    """In place on scores ``A`` (..., rows, keys), C-contiguous: ``softmax(A * scale)`` per
    row, see the module docstring."""
    rows, keys = A.shape[-2:]
    _attn_fwd(A.reshape(-1, keys), int(row0), int(rows), bool(causal), float(scale), _tiny(A), _exact(A))
    return A


def attn_softmax_backward_(gP, P, row0=0, causal=False, scale=1.0):
    """In place: ``gP = scale * P * (gP - sum(gP * P, -1))`` for (..., rows, keys) arrays;
    with ``causal`` only the keys each row sees (as ``attn_softmax_``) are read, the others
    are set to 0 (they may hold garbage: the caller's GEMMs skip them)."""
    rows, keys = P.shape[-2:]
    _attn_bwd(gP.reshape(-1, keys), P.reshape(-1, keys), int(row0), int(rows), bool(causal), float(scale),
              _tiny(P))
    return gP
