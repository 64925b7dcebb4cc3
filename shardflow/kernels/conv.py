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
