"""``sort``/``argsort`` with ``stable=False`` (the default) leave equal elements where torch's
CPU ``std::sort`` leaves them (``shardflow/ops/_std_sort.py``): the mixture-of-experts
dispatcher's ``torch.nonzero(gates).sort(0)`` printed another batch order."""

import numpy as np
import pytest
import torch

import shardflow as sf


def test_nonzero_sort_of_moe_gates_matches_torch():
    # 5 samples, 4 of 10 experts each: 20 (row, expert) pairs, the expert column full of ties
    gates = np.zeros((5, 10), np.float32)
    gates[:, [3, 4, 6, 7]] = 0.25
    th_sorted, th_index = torch.nonzero(torch.from_numpy(gates)).sort(0)
    sf_sorted, sf_index = sf.nonzero(sf.from_numpy(gates)).sort(0)
    np.testing.assert_array_equal(sf_sorted.numpy(), th_sorted.numpy())
    np.testing.assert_array_equal(sf_index.numpy(), th_index.numpy())
    assert th_index[:, 1].tolist() != sorted(th_index[:, 1].tolist())  # torch's order is not stable


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_with_ties_matches_torch_order(dtype, descending):
    rng = np.random.default_rng(0)
    for n in (16, 17, 40, 300):
        a = rng.integers(0, 4, (3, n)).astype(dtype)
        if dtype is np.float32:
            a[rng.random(a.shape) < 0.2] = np.nan  # NaNs tie with each other, largest
        for dim in (0, 1):
            th = torch.from_numpy(a).sort(dim=dim, descending=descending)
            got = sf.from_numpy(a).sort(dim=dim, descending=descending)
            np.testing.assert_array_equal(got.indices.numpy(), th.indices.numpy())
            np.testing.assert_array_equal(got.values.numpy(), th.values.numpy())
            np.testing.assert_array_equal(sf.argsort(sf.from_numpy(a), dim, descending).numpy(),
                                          torch.argsort(torch.from_numpy(a), dim, descending).numpy())


def test_sort_stable_true_keeps_equal_elements_in_order():
    a = np.tile(np.arange(3), 20)[::-1].copy()
    th = torch.from_numpy(a).sort(stable=True)
    got = sf.from_numpy(a).sort(stable=True)
    np.testing.assert_array_equal(got.indices.numpy(), th.indices.numpy())
    assert not np.array_equal(sf.from_numpy(a).sort().indices.numpy(), got.indices.numpy())


def test_heapsort_fallback_order_matches_torch():
    # Musser's median-of-3 killer drives the introsort past its depth limit into heapsort
    n, k = 256, 128
    a = [0] * n
    for i in range(1, k + 1):
        if i % 2:
            a[i - 1], a[i] = i, k + i
        a[k + i - 1] = 2 * i
    a = np.array(a) // 2
    for descending in (False, True):
        th = torch.from_numpy(a).sort(descending=descending).indices.numpy()
        np.testing.assert_array_equal(sf.from_numpy(a).sort(descending=descending).indices.numpy(), th)


@pytest.mark.parametrize("stable", [False, True])
def test_bfloat16_sort_with_nan_matches_torch(stable):
    """NumPy's sort of ml_dtypes' bfloat16 misplaced NaN (values came out unsorted); the
    slice is sorted as float32 now (exact), NaN last ascending and first descending."""
    rng = np.random.default_rng(1)
    for n in (10, 40):
        a = rng.integers(0, 3, n).astype(np.float32)
        a[[3, 9]] = np.nan
        for descending in (False, True):
            th = torch.from_numpy(a).to(torch.bfloat16).sort(descending=descending, stable=stable)
            got = sf.from_numpy(a).to(sf.bfloat16).sort(descending=descending, stable=stable)
            np.testing.assert_array_equal(got.indices.numpy(), th.indices.numpy())
            np.testing.assert_array_equal(got.values.float().numpy(), th.values.float().numpy())


def test_bfloat16_kthvalue_with_nan_matches_torch():
    a = np.array([3.0, np.nan, 1.0, 5.0, 2.0, 4.0, 0.5, 7.0], np.float32)
    for k in range(1, 9):
        th = torch.from_numpy(a).to(torch.bfloat16).kthvalue(k)
        got = sf.from_numpy(a).to(sf.bfloat16).kthvalue(k)
        np.testing.assert_array_equal(got.values.float().numpy(), th.values.float().numpy())
        assert got.indices.item() == th.indices.item()
