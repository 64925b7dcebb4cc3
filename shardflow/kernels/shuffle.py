"""``randperm``'s shuffle (``backend/random_stream.py``): ``for i < n - 1: z = raw[i] % (n - i);
swap(r[i], r[i + z])``, torch's loop over its ``random()`` outputs.

Each swap sees the one before, so NumPy cannot vectorise it; as a Python loop it cost about
0.3 us a swap (``randperm(1_000_000)``: 0.33 s, torch 9 ms). Compiled, it is a few ms. Integer
only: the permutation is the NumPy path's exactly (``tests/kernels/test_kernels_vs_numpy.py``).
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel


@kernel(parallel=False)  # one sequential loop
def _shuffle(r, raw):
    n = r.size
    for i in range(n - 1):
        z = np.int64(raw[i] % np.uint64(n - i))
        if z:
            t = r[i]
            r[i] = r[i + z]
            r[i + z] = t


def shuffle(r: np.ndarray, raw: np.ndarray) -> None:
    """Shuffle the int64 array ``r`` in place with the ``n - 1`` uint64 outputs ``raw``."""
    _shuffle(r, raw)
