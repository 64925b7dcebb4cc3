"""2-D max pooling over non-overlapping windows (``stride == kernel_size``, no padding, no
dilation: ``max_pool2d(x, 2)``, the common case), forward and backward in one pass each.

The NumPy path (``ops/pool.py``) makes about five passes per kernel position in forward
(compare, three 1-byte passes updating the arg-max, the running maximum) and two per position
in backward (mask, strided multiply). Here forward reads each window once and writes the
maximum and a 1-byte window position; backward writes each input-gradient row once.

Semantics are the NumPy path's exactly, which are PyTorch's CPU kernel's: the window is
scanned in row-major order keeping the position of the first strict ``>`` maximum and a
running ``np.maximum`` (NaN propagates into the value), except that every NaN moves the
position (``val > max || isnan(val)``), so a window holding NaN reports its last NaN; backward writes ``g * (position == k)`` (``g * 1`` or ``g * 0``, as NumPy's
``g * mask``), and zeros in rows/columns no window covers.
"""

from __future__ import annotations

import numpy as np

from ._numba import helper, kernel, prange


@helper
def _max_nan(p, q):
    """np.maximum(p, q) (NaN propagates), written as a select, not a branch."""
    return q if (q > p) | (q != q) else p


@kernel
def _fwd2x2(x, out, kidx, planes, h, w, oh_, ow_):
    # x: flat (P, H, W); out, kidx: flat (P, OH, OW). Branch-free selects: a data-dependent
    # branch on random data mispredicts (docs/KERNELS.md, "Tried and dropped").
    for t in prange(planes * oh_):
        p = t // oh_
        i = t % oh_
        r0 = (p * h + 2 * i) * w
        r1 = r0 + w
        o = t * ow_
        for j in range(ow_):
            a = x[r0 + 2 * j]
            b = x[r0 + 2 * j + 1]
            c = x[r1 + 2 * j]
            d = x[r1 + 2 * j + 1]
            # PyTorch's rule: move on a strict > or on a NaN (so the position is the last NaN)
            k = np.int8(1) if (b > a) | (b != b) else np.int8(0)
            best = _max_nan(a, b)
            k = np.int8(2) if (c > best) | (c != c) else k
            best = _max_nan(best, c)
            k = np.int8(3) if (d > best) | (d != d) else k
            out[o + j] = _max_nan(best, d)
            kidx[o + j] = k


@kernel
def _bwd2x2(g, kidx, eye, gx, planes, h, w, oh_, ow_):
    # g, kidx: flat (P, OH, OW); gx: flat (P, H, W), written whole (rows and columns that no
    # window covers get zeros). eye: the (4, 4) identity in g's dtype: ``g * eye[k, pos]`` is
    # NumPy's ``g * (k == pos)`` without a data-dependent branch. Row views indexed by the
    # loop counter (not computed flat indices) let the loop vectorise: 2.1 -> 1.2 ms.
    zero = eye[0, 1]
    for t in prange(planes * oh_):
        p = t // oh_
        i = t % oh_
        r0 = (p * h + 2 * i) * w
        x0 = gx[r0:r0 + w]
        x1 = gx[r0 + w:r0 + 2 * w]
        gv = g[t * ow_:(t + 1) * ow_]
        kv = kidx[t * ow_:(t + 1) * ow_]
        for j in range(ow_):
            gj = gv[j]
            k = kv[j]
            x0[2 * j] = gj * eye[k, 0]
            x0[2 * j + 1] = gj * eye[k, 1]
            x1[2 * j] = gj * eye[k, 2]
            x1[2 * j + 1] = gj * eye[k, 3]
        for cc in range(2 * ow_, w):
            x0[cc] = zero
            x1[cc] = zero
        if i == oh_ - 1:
            for cc in range((p * h + 2 * oh_) * w, (p + 1) * h * w):
                gx[cc] = zero


def max_pool2d_2x2_forward(x):
    """(out, kidx) of 2x2 windows with stride 2 over a C-contiguous (..., H, W) ``x``."""
    lead = x.shape[:-2]
    h, w = x.shape[-2:]
    oh, ow = h // 2, w // 2
    planes = int(np.prod(lead)) if lead else 1
    out = np.empty(lead + (oh, ow), dtype=x.dtype)
    kidx = np.empty((planes, oh, ow), dtype=np.int8)
    _fwd2x2(x.reshape(-1), out.reshape(-1), kidx.reshape(-1), planes, h, w, oh, ow)
    return out, kidx


def max_pool2d_2x2_backward(g, kidx, xshape):
    """The (..., H, W) input gradient: ``g`` at each window's arg-max, zeros elsewhere."""
    h, w = xshape[-2:]
    planes, oh, ow = kidx.shape
    gx = np.empty(xshape, dtype=g.dtype)
    _bwd2x2(np.ascontiguousarray(g).reshape(-1), kidx.reshape(-1), np.eye(4, dtype=g.dtype), gx.reshape(-1),
            planes, h, w, oh, ow)
    return gx
