"""The compiled float32 Box-Muller (``kernels/box_muller.py``) gives the NumPy path's bits
(``backend/avx_mathfun.py``: torch's, ``tests/test_normal_draws_bitwise.py``), on random
uniforms and on the edges (u1 = 0 and the largest u1, u2 = 0), with and without mean/std;
its copied constants are avx_mathfun's."""

import numpy as np
import pytest

from shardflow import kernels
from shardflow.backend import avx_mathfun as m

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed")


def _numpy_path(d, mean, std):
    radius = m.log256(np.float32(1) - d[:, :8])
    radius *= np.float32(-2)
    np.sqrt(radius, out=radius)
    s, c = m.sincos256(d[:, 8:] * np.float32(2.0 * np.pi))
    out = np.empty(d.shape, np.float32)
    np.multiply(radius, c, out=out[:, :8])
    np.multiply(radius, s, out=out[:, 8:])
    if std != 1.0 or mean != 0.0:
        out = (out.astype(np.float64) * np.float64(np.float32(std)) + np.float64(np.float32(mean))).astype(np.float32)
    return out


@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (0.5, 0.02)])
def test_compiled_box_muller_has_the_numpy_paths_bits(mean, std):
    from shardflow.kernels import box_muller

    d = np.random.default_rng(0).random((4096, 16), dtype=np.float32)
    d = np.floor(d * 2**24).astype(np.float32) / np.float32(2**24)  # uniform24's grid
    d[0, :8] = 0.0                                   # u1 = 0: log(1)
    d[1, :8] = np.float32(1) - np.float32(2**-24)    # the largest u1: log of the smallest x
    d[2, 8:] = 0.0                                   # u2 = 0: sin 0, cos 0
    got = box_muller.normal16(d, mean, std)
    want = _numpy_path(d, mean, std)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_copied_constants_are_avx_mathfuns():
    from shardflow.kernels import box_muller as b

    assert [b._P0, b._P1, b._P2, b._P3, b._P4, b._P5, b._P6, b._P7, b._P8] == [np.float64(c) for c in m._LOG_P]
    assert (b._Q1, b._Q2, b._SQRTHF, b._FOPI) == (m._LOG_Q1, m._LOG_Q2, m._SQRTHF, m._FOPI)
    assert b._MIN_NORM_F32 == m._MIN_NORM_POS
    assert [b._DP1, b._DP2, b._DP3] == list(m._DP)
    assert [b._S0, b._S1, b._S2] == [np.float64(c) for c in m._SINCOF]
    assert [b._C0, b._C1, b._C2] == [np.float64(c) for c in m._COSCOF]


_PARALLEL_SCRIPT = """
import numpy as np
from shardflow.kernels import box_muller
from tests.kernels.test_box_muller import _numpy_path
d = np.random.default_rng(1).random((3000, 16), dtype=np.float32)  # 24000 pairs: several threads
d = np.floor(d * 2**24).astype(np.float32) / np.float32(2**24)
for mean, std in ((0.0, 1.0), (0.5, 0.02)):
    got = box_muller.normal16(d, mean, std)
    assert np.array_equal(got.view(np.uint32), _numpy_path(d, mean, std).view(np.uint32)), (mean, std)
assert all(k.built_parallel for k in (box_muller._log_argument, box_muller._mantissa_scale,
                                      box_muller._radius, box_muller._sincos_times_radius))
print("ok")
"""


def test_parallel_build_has_the_same_bits():
    """Machines with more than two CPUs run the kernels' parallel build, which CI's 2-CPU machine
    never compiles by default (it runs one thread there). The first parallel build of this kernel
    (one function, four prange loops over views of one buffer) gave NaN for most normals: every
    model's initial weights on a 16-core machine. Here two threads force that build."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "SHARDFLOW_KERNEL_THREADS": "2", "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-c", _PARALLEL_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=240, cwd=root)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
