"""Embedding backward: ``gw[ids[r]] += g[r]`` for every row ``r``, repeated ids adding up; the
same loop serves ``index_add``, ``index_select``'s backward and ``grid_sample``'s
(``add_rows``: ``ops/index.py`` ``_add_at`` with one row index).

``np.add.at`` does this one element at a time through its generic ufunc loop (GPT-mini's token
embedding, 2048 ids x 256: about 3 ms); the kernel walks the rows in order and adds each one
with a vectorised inner loop. Threads split the *columns* (blocks of 32), not the rows, so no
two threads ever write one location and each element's sum is formed in the same order as
``np.add.at`` forms it (row order): the two paths give bit-identical results.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, prange

_COLS = 32  # columns per parallel block: 128 bytes of float32, whole cache lines


@kernel
def _bwd(ids, g, gw):
    n, D = g.shape
    nblk = (D + _COLS - 1) // _COLS
    for b in prange(nblk):
        c0 = b * _COLS
        c1 = min(D, c0 + _COLS)
        for r in range(n):
            row = ids[r]
            for j in range(c0, c1):
                gw[row, j] += g[r, j]


def embedding_backward(ids, g2, num_embeddings):
    """(V, D) gradient of the embedding table from int ids (n,) and row gradients g2 (n, D)."""
    gw = np.zeros((num_embeddings, g2.shape[1]), g2.dtype)
    _bwd(np.ascontiguousarray(ids, dtype=np.int64), g2, gw)
    return gw


@kernel(parallel=False)
def _add_flat(ids, v, out):
    for r in range(ids.size):
        out[ids[r]] += v[r]


def add_rows(target, ids, values) -> None:
    """``np.add.at(target, ids, values)`` for a C-contiguous 2-D ``target`` (R, D), int ids
    (n,) in ``[0, R)`` and ``values`` (n, D) of its dtype: in place, in add.at's order. One
    column (scatter_add's element-wise index) runs a plain loop: the column-block loop's per-row
    setup made it slower than NumPy's add.at there (0.25 vs 0.16 ms for 131k values; 0.08 ms)."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if values.shape[1] == 1:
        _add_flat(ids, values.reshape(-1), target.reshape(-1))
    else:
        _bwd(ids, values, target)
