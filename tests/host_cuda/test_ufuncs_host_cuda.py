"""backend/ufuncs.py on CuPy's stand-in (which, as CuPy 14, refuses ``maximum.accumulate``,
``logaddexp.accumulate``, ``multiply.at`` and ``add``/``maximum``/``minimum.at`` of the dtypes
its scatter kernels lack) against NumPy's own ufunc methods."""

from contextlib import nullcontext

import numpy as np
import pytest

from shardflow.backend.ufuncs import accumulate, multiply_at, scatter_at

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



@pytest.mark.parametrize("name", ["add", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128", "bool", "int8", "uint8", "int16",
                                   "float16", "float32", "int64"])
def test_scatter_at_matches_numpy_for_every_dtype(name, dtype):
    if dtype.startswith("complex") and name != "add":
        pytest.skip("complex max/min scatter: refused on a device (no kernel), NumPy orders lexicographically")
    rng = np.random.default_rng(2)
    target = (rng.normal(size=(4, 3)) * 60).astype(dtype)
    values = (rng.normal(size=(6, 3)) * 60).astype(dtype)
    if dtype.startswith("complex"):
        target = target + 1j * (rng.normal(size=(4, 3)) * 3).astype(dtype)
        values = values + 1j * (rng.normal(size=(6, 3)) * 3).astype(dtype)
    rows = np.array([0, 2, 2, 3, 0, 2])  # repeated rows accumulate (int8 sums wrap, as NumPy's)
    want = target.copy()
    getattr(np, name).at(want, rows, values)
    got = cp.asarray(target)
    if dtype not in ("float32", "int64") and not (dtype == "float16" and name == "add"):
        with pytest.raises(TypeError, match="only supports"):  # the stand-in refuses, as CuPy
            getattr(cp, name).at(cp.asarray(target), cp.asarray(rows), cp.asarray(values))
    scatter_at(name, got, cp.asarray(rows), cp.asarray(values))
    np.testing.assert_array_equal(got.get(), want)
