"""torch's Mersenne Twister outputs in a compiled loop (``backend/random_stream.py``'s large
draws): NumPy's ``MT19937.random_raw`` costs about 8 ns an output (a call through a function
pointer per value), torch's engine 2-3 ns, so a 16M-element dropout mask spent 0.3 s there.
The kernel is the reference twister (twist the 624 words when they are used up, then temper),
run on a copy of NumPy's state, which the caller writes back: the values and the state after
are NumPy's bit for bit (``tests/kernels/test_mt19937.py``)."""

from __future__ import annotations

import numpy as np

from ._numba import kernel

_N, _M = 624, 397


@kernel
def _fill(key, pos, out):
    """``out[i]`` = the next tempered output; ``key`` (uint64 words) and ``pos[0]`` advance."""
    upper, lower, matrix_a = np.uint64(0x80000000), np.uint64(0x7FFFFFFF), np.uint64(0x9908B0DF)
    mask = np.uint64(0xFFFFFFFF)
    zero, one = np.uint64(0), np.uint64(1)
    p = pos[0]
    for i in range(out.size):
        if p >= 624:
            for k in range(624):
                y = (key[k] & upper) | (key[(k + 1) % 624] & lower)
                key[k] = key[(k + 397) % 624] ^ (y >> one) ^ (matrix_a if (y & one) != zero else zero)
            p = 0
        y = key[p]
        p += 1
        y ^= y >> np.uint64(11)
        y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
        y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
        y ^= y >> np.uint64(18)
        out[i] = y & mask
    pos[0] = p


def random_raw(mt: np.random.MT19937, n: int) -> np.ndarray:
    """``mt.random_raw(n)`` (uint64 holding 32-bit outputs), compiled; ``mt`` advances by ``n``."""
    st = mt.state["state"]
    key = np.asarray(st["key"], dtype=np.uint64).copy()
    pos = np.array([st["pos"]], dtype=np.int64)
    out = np.empty(n, dtype=np.uint64)
    _fill(key, pos, out)
    mt.state = {"bit_generator": "MT19937", "state": {"key": key.astype(np.uint32), "pos": int(pos[0])}}
    return out
