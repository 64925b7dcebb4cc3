"""backend/ufuncs.py on CuPy's stand-in (which, as CuPy 14, refuses ``maximum.accumulate``,
``logaddexp.accumulate`` and ``multiply.at``) against NumPy's own ufunc methods."""

from contextlib import nullcontext

import numpy as np
import pytest

from shardflow.backend.ufuncs import accumulate, multiply_at

from ..doubles import host_cupy as cp


@pytest.mark.parametrize("name", ["maximum", "minimum", "logaddexp", "add"])
@pytest.mark.parametrize("shape,axis", [((1,), 0), ((7,), 0), ((3, 9), 1), ((16, 2, 3), 0), ((2, 0), 1)])
def test_accumulate_matches_numpy(name, shape, axis):
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, shape).astype(np.float64)  # small integers: ties on purpose
    if a.size > 4:
        a.flat[3] = np.nan if name != "add" else 1.0
        a.flat[1] = -np.inf
    with pytest.raises(NotImplementedError) if name != "add" else nullcontext():
        getattr(cp, name).accumulate(cp.asarray(a), axis=axis)  # the stand-in refuses, as CuPy
    got = accumulate(name, cp.asarray(a), axis=axis)
    want = getattr(np, name).accumulate(a, axis=axis)
    np.testing.assert_allclose(got.get(), want, rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(accumulate(name, a, axis=axis), want)  # NumPy keeps its own


def test_multiply_at_matches_numpy_with_repeated_indices():
    rng = np.random.default_rng(1)
    target = rng.normal(size=(4, 5))
    rows = rng.integers(0, 4, (3, 6))
    cols = rng.integers(0, 5, (1, 6))  # broadcast against rows; many repeats
    vals = rng.normal(size=(3, 6))
    vals[0, 0] = 0.0
    want = target.copy()
    np.multiply.at(want, (rows, cols), vals)
    got = cp.asarray(target)
    with pytest.raises(NotImplementedError):
        cp.multiply.at(got, (rows, cols), cp.asarray(vals))
    multiply_at(got, (cp.asarray(rows), cp.asarray(cols)), cp.asarray(vals))
    np.testing.assert_allclose(got.get(), want, rtol=1e-12)
    ints = np.arange(1, 7).reshape(2, 3)
    want_i = ints.copy()
    np.multiply.at(want_i, (np.array([0, 0, 1, 0]), np.array([2, 2, 2, 2])), np.array([2, 3, 5, 7]))
    got_i = cp.asarray(ints)
    multiply_at(got_i, (cp.asarray(np.array([0, 0, 1, 0])), cp.asarray(np.array([2, 2, 2, 2]))), cp.asarray(np.array([2, 3, 5, 7])))
    np.testing.assert_array_equal(got_i.get(), want_i)  # exact for integers

