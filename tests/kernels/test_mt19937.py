"""The compiled twister (``kernels/mt19937.py``) gives NumPy's ``MT19937.random_raw`` outputs
and leaves the same state, across twists and from any position (it serves
``backend/random_stream.py``'s large draws, which must stay torch's numbers)."""

import numpy as np
import pytest

from shardflow import kernels
from shardflow.kernels import mt19937

pytestmark = pytest.mark.skipif(not kernels.enabled(), reason="numba kernels are off")


@pytest.mark.parametrize("first,n", [(0, 1), (0, 623), (0, 624), (5, 625), (700, 5000), (1, 20000)])
def test_outputs_and_state_equal_numpys(first, n):
    a, b = np.random.MT19937(), np.random.MT19937()
    a._legacy_seeding(11)
    b._legacy_seeding(11)
    a.random_raw(first)
    b.random_raw(first)
    np.testing.assert_array_equal(mt19937.random_raw(b, n), a.random_raw(n))
    sa, sb = a.state["state"], b.state["state"]
    assert sa["pos"] == sb["pos"] and np.array_equal(sa["key"], sb["key"])
    np.testing.assert_array_equal(a.random_raw(3), b.random_raw(3))  # and they go on alike
