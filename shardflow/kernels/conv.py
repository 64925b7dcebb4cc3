"""col2im for stride-1 2-D convolutions in the "flat" layout of ``ops/conv.py``.

The input gradient of a stride-1 convolution is ``col2im(W^T @ g)``. ``ops/conv.py`` computes
the column gradient in the wide layout ``(C, K, N, Lw)``: for kernel position ``k`` and input
plane ``(n, c)``, its contribution is one contiguous run of ``Lw = OH * Wp`` elements added
at offset ``off_k`` of the flattened padded plane. The NumPy path makes ``K`` passes over the
whole gradient into a zeroed padded buffer (``K`` strided additions of ``(N, C, Lw)``) and
returns a cropped view of it. This kernel owns one plane per iteration (planes split over
threads, no write conflicts): it adds the ``K`` runs into a plane-sized buffer that stays in
L1, in the same order (so the sums are the NumPy path's bit for bit), then writes the cropped
plane into a contiguous ``(N, C, H, W)`` input gradient.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, prange


@kernel
def _col2im_flat2d(g, offs, gx, c_, n_, lw, buflen, wp, pt, pl, h, w):
    # g: flat (C, K, N, Lw); gx: flat (N, C, H, W)
    k_ = offs.shape[0]
    for t in prange(c_ * n_):
        c = t // n_  # c outer, n inner: consecutive planes read consecutive runs of g
        n = t % n_
        buf = np.zeros(buflen, dtype=g.dtype)
        for k in range(k_):
            src = ((c * k_ + k) * n_ + n) * lw
            off = offs[k]
            bv = buf[off:off + lw]
            gv = g[src:src + lw]
            for j in range(lw):
                bv[j] += gv[j]
        dst = (n * c_ + c) * h * w
        for i in range(h):
            row = (i + pt) * wp + pl
            ov = gx[dst + i * w:dst + (i + 1) * w]
            bv = buf[row:row + w]
            for j in range(w):
                ov[j] = bv[j]


def col2im_flat2d(gcols, offs, xshape, buflen, wp, pads):
    """The contiguous (N, C, H, W) input gradient from the wide column gradient ``gcols``
    ((C, K, N, Lw) in any shape of that size), kernel offsets ``offs`` into the flattened
    padded plane of row length ``wp``; ``pads`` = ((top, _), (left, _))."""
    n, c, h, w = xshape
    k = len(offs)
    lw = gcols.size // (c * k * n)
    gx = np.empty(xshape, dtype=gcols.dtype)
    _col2im_flat2d(gcols.reshape(-1), np.asarray(offs, dtype=np.int64), gx.reshape(-1), c, n, lw,
                   buflen, wp, pads[0][0], pads[1][0], h, w)
    return gx


@kernel
def _swap01(src, bias, dst, a_, b_, l_, has_bias):
    # src: flat (A, B, L) -> dst: flat (B, A, L), dst[j, i] = src[i, j] (+ bias[i])
    for t in prange(a_ * b_):
        i = t // b_
        j = t % b_
        sv = src[t * l_:(t + 1) * l_]
        dv = dst[(j * a_ + i) * l_:(j * a_ + i + 1) * l_]
        if has_bias:
            bi = bias[i]
            for k in range(l_):
                dv[k] = sv[k] + bi
        else:
            for k in range(l_):
                dv[k] = sv[k]


@kernel
def _grad_t_wide(g, gt, gtw, n_, o_, oh_, ow_, wp):
    # g: flat (N, O, OH, OW) -> gt: flat (O, N, OH*OW) and gtw: flat (O, N, OH, Wp), the
    # rows of gtw padded with zeros from OW to Wp
    zero = g[0] * 0
    ll = oh_ * ow_
    for t in prange(n_ * o_):
        n = t // o_
        o = t % o_
        sv = g[t * ll:(t + 1) * ll]
        dv = gt[(o * n_ + n) * ll:(o * n_ + n + 1) * ll]
        for k in range(ll):
            dv[k] = sv[k]
        base = (o * n_ + n) * oh_ * wp
        for i in range(oh_):
            wv = gtw[base + i * wp:base + (i + 1) * wp]
            rv = sv[i * ow_:(i + 1) * ow_]
            for k in range(ow_):
                wv[k] = rv[k]
            for k in range(ow_, wp):
                wv[k] = zero


def swap01(src, bias=None):
    """``src`` (A, B, *rest) C-contiguous -> a new contiguous (B, A, *rest) array (the copy
    ``np.ascontiguousarray(src.swapaxes(0, 1))``), plus ``bias[i]`` on every ``src[i]``."""
    a, b = src.shape[:2]
    rest = src.shape[2:]
    dst = np.empty((b, a) + rest, dtype=src.dtype)
    l = src.size // (a * b) if a * b else 0
    has = bias is not None
    _swap01(src.reshape(-1), bias if has else src.reshape(-1)[:1], dst.reshape(-1), a, b, l, has)
    return dst


def grad_t_wide(g, wp):
    """From the (N, O, OH, OW) output gradient ``g``: ``gt`` (O, N, OH*OW) and the wide
    ``gtw`` (O, N, OH, Wp), rows zero-padded to ``wp``, in one pass."""
    n, o, oh, ow = g.shape
    gt = np.empty((o, n, oh * ow), dtype=g.dtype)
    gtw = np.empty((o, n, oh, wp), dtype=g.dtype)
    _grad_t_wide(g.reshape(-1), gt.reshape(-1), gtw.reshape(-1), n, o, oh, ow, wp)
    return gt, gtw

