"""The fast paths of the ops that were 5-15x slower than PyTorch (docs/BENCH.md, "Slow ops").

Each fast path must give what the old code gave, bit for bit: the reference here is the
plain NumPy formulation it replaced (``np.add.at`` with the original index) or PyTorch.
Speed is not tested (it lives in docs/BENCH.md).
"""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend.flat_at import flat_at


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


# ---------------------------------------------------------------------------- flat_at
@pytest.mark.parametrize("seed", range(40))
def test_flat_at_matches_ufunc_at_bit_for_bit(seed):
    """Random targets, index tuples (negative entries, broadcasting, fewer arrays than dims),
    dtypes and layouts: the flat route forms every sum in np.add.at's order."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    shape = tuple(int(s) for s in rng.integers(1, 6, nd))
    k = int(rng.integers(1, nd + 1))
    bshape = tuple(int(s) for s in rng.integers(1, 6, int(rng.integers(1, 3))))
    index = tuple(rng.integers(-shape[d], shape[d], bshape) for d in range(k))
    if k == 1 and seed % 2:
        index = index[0]
    dtype = [np.float32, np.float64, np.int32][seed % 3]
    values = (rng.standard_normal(bshape + shape[k:]) * 1e3).astype(dtype)
    if seed % 4 == 1:
        values = values[..., :1]  # broadcast along the trailing dims
    for ufunc in (np.add, np.maximum):
        start = (rng.standard_normal(shape) * 100).astype(dtype)
        if seed % 5 == 0:
            start = np.asfortranarray(start)  # a non-contiguous target: copied in and out
        want, got = start.copy(), start.copy(order="K")
        ufunc.at(want, index, values)
        flat_at(ufunc, got, index, values)
        _same_bits(want, got)


def test_flat_at_many_repeats_float32_order():
    """Many float32 values into few rows: a running sum in index order, not a pairwise or
    float64 one (the two differ in the last bits here)."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3, 5000)
    vals = rng.standard_normal((5000, 4)).astype(np.float32) * np.float32(1e4)
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, idx, vals)
    got = np.zeros((3, 4), np.float32)
    flat_at(np.add, got, idx, vals)
    _same_bits(want, got)
    wide = np.zeros((3, 4))
    np.add.at(wide, idx, vals.astype(np.float64))
    assert not np.array_equal(wide.astype(np.float32), want)  # the test can tell the orders apart


@pytest.mark.parametrize("index", [
    (np.array([3]),),  # out of range
    (np.array([0, 1]), np.array([0, 1, 2])),  # index arrays that do not broadcast
    (slice(None), np.array([0, 2])),  # a slice before an array: left to ufunc.at
    (np.array([True, False, True]),),  # a boolean mask: left to ufunc.at
])
def test_flat_at_errors_and_other_indexes_stay_numpys(index):
    values = np.ones(2, np.float32)
    outcomes = []
    for f in (lambda t: np.add.at(t, index, values), lambda t: flat_at(np.add, t, index, values)):
        t = np.zeros((3, 3), np.float32)
        try:
            f(t)
            outcomes.append(t.tobytes())
        except Exception as e:  # noqa: BLE001 - the two must raise the same
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


def test_flat_at_python_number_is_weak():
    """A Python float added to float32 is cast to float32 first (NEP 50), as ufunc.at does."""
    want, got = np.zeros(3, np.float32), np.zeros(3, np.float32)
    np.add.at(want, np.array([0, 0, 1]), 0.1)
    flat_at(np.add, got, np.array([0, 0, 1]), 0.1)
    _same_bits(want, got)


# ---------------------------------------------------------------------------- grid_sample
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_dense_grid_matches_torch(mode, padding_mode):
    """More samples than pixels (each pixel gets many corner gradients), points outside."""
    g = np.random.default_rng(1)
    x = g.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = (g.random((2, 9, 11, 2)) * 2.4 - 1.2).astype(np.float32)
    outs = []
    for m in (torch, sf):
        xt, gt = m.tensor(x, requires_grad=True), m.tensor(grid, requires_grad=True)
        f = m.nn.functional.grid_sample
        y = f(xt, gt, mode=mode, padding_mode=padding_mode, align_corners=False)
        (y * m.arange(y.numel(), dtype=y.dtype).reshape(y.shape).cos()).sum().backward()
        outs.append([y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()])
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- randperm
@pytest.mark.parametrize("n", [(1 << 14) + 3, 100_003])
def test_randperm_kernel_shuffle_is_torchs_and_the_numpy_paths(monkeypatch, n):
    """The compiled shuffle (from 2^14 elements) gives torch's permutation and the NumPy
    path's, and leaves the generator where torch's is (the next draw agrees too)."""
    pytest.importorskip("numba")
    want = torch.randperm(n, generator=torch.Generator().manual_seed(7))
    want_next = torch.Generator().manual_seed(7)
    torch.randperm(n, generator=want_next)
    got = {}
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        g = sf.Generator().manual_seed(7)
        got[mode] = (sf.randperm(n, generator=g).numpy(), sf.randint(0, 1000, (5,), generator=g).numpy())
    np.testing.assert_array_equal(got["numba"][0], want.numpy())
    np.testing.assert_array_equal(got["numpy"][0], want.numpy())
    np.testing.assert_array_equal(got["numba"][1], torch.randint(0, 1000, (5,), generator=want_next).numpy())
    np.testing.assert_array_equal(got["numpy"][1], got["numba"][1])
