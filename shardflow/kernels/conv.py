"""Kernels for the one-GEMM convolution lowering of ``ops/conv.py`` (float32/float64).

* ``swap01``: the forward GEMM gives the output as (O, N, L); one pass writes it as
  (N, O, L) and adds the bias (NumPy: a strided ``np.add``, about twice as long).
* ``grad_t``: from the (N, O, L) output gradient, in one pass, the transposed (O, N, L) copy
  the weight-gradient GEMM reads, the bias gradient (float64 sums) and, for 2-D stride-1
  convolutions, the "wide" copy (rows zero-padded to the padded input's row length) that the
  input-gradient GEMM reads.
* ``col2im_flat2d``: the input gradient of a 2-D stride-1 convolution from the wide column
  gradient ``(C, K, N, Lw)``: for kernel position ``k`` and input plane ``(n, c)`` its
  contribution is one contiguous run of ``Lw = OH * Wp`` elements added at offset ``off_k``
  of the flattened padded plane. The NumPy path makes ``K`` passes over the whole gradient
  into a zeroed padded buffer and crops a view of it (4.5 ms for the CNN's second conv, one
  thread); the kernel owns one plane per iteration (planes split over threads, no write
  conflicts), adds the ``K`` runs into a plane buffer that stays in L1, in the NumPy path's
  order (bit-identical sums), and writes the cropped plane into a contiguous (N, C, H, W)
  gradient (1.7 ms).

* ``col2im_flat2d_dw``: the same for a depthwise convolution (one input and one output channel
  per group), from the wide output gradient ``(C, N, Lw)`` and the weights: each run is
  ``w[c, k] * g`` added as it comes (compiled exact: the product rounded, then added, as the
  NumPy path's product buffer and col2im do), without the ``K``-times-larger column buffer.

Loops index row views with the loop counter: with computed flat indices numba keeps a
negative-index wraparound check per element and the loops do not vectorise (the col2im
kernel took 5.4 ms that way).
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


@kernel(exact=True)
def _col2im_flat2d_dw(g, wk, offs, gx, c_, n_, lw, buflen, wp, pt, pl, h, w):
    # g: flat (C, N, Lw); wk: (C, K); gx: flat (N, C, H, W)
    k_ = offs.shape[0]
    for t in prange(c_ * n_):
        c = t // n_
        n = t % n_
        buf = np.zeros(buflen, dtype=g.dtype)
        src = (c * n_ + n) * lw
        gv = g[src:src + lw]
        for k in range(k_):
            off = offs[k]
            wv = wk[c, k]
            bv = buf[off:off + lw]
            for j in range(lw):
                bv[j] += wv * gv[j]
        dst = (n * c_ + c) * h * w
        for i in range(h):
            row = (i + pt) * wp + pl
            ov = gx[dst + i * w:dst + (i + 1) * w]
            bv = buf[row:row + w]
            for j in range(w):
                ov[j] = bv[j]


def col2im_flat2d_dw(gtw, wk, offs, xshape, buflen, wp, pads):
    """``col2im_flat2d`` of the depthwise column gradient ``wk[c, k] * gtw[c]`` without
    forming it: ``gtw`` the wide (C, N, Lw) output gradient, ``wk`` (C, K) the weights."""
    n, c, h, w = xshape
    lw = gtw.size // (c * n)
    gx = np.empty(xshape, dtype=gtw.dtype)
    _col2im_flat2d_dw(gtw.reshape(-1), np.ascontiguousarray(wk), np.asarray(offs, dtype=np.int64),
                      gx.reshape(-1), c, n, lw, buflen, wp, pads[0][0], pads[1][0], h, w)
    return gx


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
def _grad_t(g, gt, gtw, part, n_, o_, oh_, ow_, wp, wide):
    # g: flat (N, O, OH, OW) -> gt: flat (O, N, OH*OW); with ``wide`` also gtw: flat
    # (O, N, OH, Wp), rows zero-padded from OW to Wp; part[n, o]: the float64 sum of g[n, o]
    # (the bias gradient's partial sums: no race, each (n, o) is one iteration)
    zero = g[0] * 0
    ll = oh_ * ow_
    for t in prange(n_ * o_):
        n = t // o_
        o = t % o_
        sv = g[t * ll:(t + 1) * ll]
        dv = gt[(o * n_ + n) * ll:(o * n_ + n + 1) * ll]
        acc = 0.0
        for k in range(ll):
            v = sv[k]
            dv[k] = v
            acc += v
        part[n, o] = acc
        if wide:
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


def grad_t(g, wp=None):
    """From the contiguous (N, O, *S) output gradient ``g``, in one pass: ``gt`` (O, N, prod(S))
    (the copy ``g.swapaxes(0, 1)``), the bias gradient (float64 sums per (n, o), added over n,
    in g's dtype) and, for 2-D ``g`` and a row length ``wp``, the wide ``gtw``
    (O, N, OH, Wp) with rows zero-padded from OW to ``wp`` (else None)."""
    n, o = g.shape[:2]
    wide = wp is not None
    oh, ow = (g.shape[2], g.shape[3]) if wide else (1, g.size // (n * o) if n * o else 0)
    gt = np.empty((o, n, oh * ow), dtype=g.dtype)
    gtw = np.empty((o, n, oh, wp) if wide else (1,), dtype=g.dtype)
    part = np.empty((n, o), dtype=np.float64)
    _grad_t(g.reshape(-1), gt.reshape(-1), gtw.reshape(-1), part, n, o, oh, ow, wp if wide else 0, wide)
    return gt, part.sum(axis=0).astype(g.dtype), gtw if wide else None
