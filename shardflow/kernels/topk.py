"""``topk`` of a few (``4 k < n``) along the last axis: one pass per row keeping the best ``k``
in a small sorted buffer, where ``np.argpartition`` (introselect) took ~8 ns an element
((256, 1024), k = 10: 2.0 ms; this pass ~0.2 ms).

The NumPy path (``ops/sort.py``: argpartition, then a stable sort of the ``k`` winners) resolves
ties in argpartition's own, unspecified order. So the kernel answers only rows where the answer
is unique: no NaN, the ``k`` winners all different, and the ``k``-th strictly better than every
loser. It reports the rows it could not answer (``ok`` False) and the caller runs the NumPy
path for the whole array when there is one: results are the NumPy path's exactly, always.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, prange


@kernel
def _topk_rows(a, k, largest, idx, ok):
    rows, n = a.shape
    for r in prange(rows):
        vals = np.empty(k, a.dtype)
        pos = np.empty(k, np.int64)
        count = 0
        have_loser = False
        loser = a[r, 0]  # best value left out so far (meaningful once have_loser)
        good = True
        for j in range(n):
            v = a[r, j]
            if v != v:  # NaN: argpartition's order decides
                good = False
                break
            if count == k:
                w = vals[k - 1]
                if (v > w) if largest else (v < w):
                    out = w  # the k-th is pushed out
                else:
                    out = v
                    if not have_loser or ((out > loser) if largest else (out < loser)):
                        loser = out
                        have_loser = True
                    continue
                if not have_loser or ((out > loser) if largest else (out < loser)):
                    loser = out
                    have_loser = True
                i = k - 1
            else:
                i = count
                count += 1
            while i > 0 and ((v > vals[i - 1]) if largest else (v < vals[i - 1])):
                vals[i] = vals[i - 1]
                pos[i] = pos[i - 1]
                i -= 1
            vals[i] = v
            pos[i] = j
        if good:
            for i in range(1, k):
                if vals[i] == vals[i - 1]:  # tied winners: their order is argpartition's
                    good = False
            if have_loser and vals[k - 1] == loser:  # a tie at the boundary: which one is in
                good = False
        ok[r] = good
        if good:
            for i in range(k):
                idx[r, i] = pos[i]


def topk_last(a: np.ndarray, k: int, largest: bool):
    """``(idx (rows, k) int64, all_ok)`` for a C-contiguous float (rows, n) array, 1 <= k < n;
    ``idx`` is meaningful only when ``all_ok`` (see the module docstring)."""
    rows = a.shape[0]
    idx = np.empty((rows, k), np.int64)
    ok = np.empty(rows, np.bool_)
    _topk_rows(a, k, largest, idx, ok)
    return idx, bool(ok.all())
