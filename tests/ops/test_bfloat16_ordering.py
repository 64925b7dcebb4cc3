"""Ordering ops on bfloat16 against PyTorch (found by tests/ops/fuzz): NumPy's sort of
ml_dtypes' bfloat16 left a NaN where it was and mis-sorted the values around it, so sort,
argsort, topk, kthvalue, unique and searchsorted gave wrong answers (silently) on any
bfloat16 tensor holding a NaN; now ordered by the exact float32 image (NaN last, as torch).
Also: searchsorted with an empty N-D boundaries tensor returned no result."""

import ml_dtypes
import numpy as np
import pytest
import torch

import shardflow as sf

V = np.array([[np.nan, 1, 2.0, -1, np.nan, 0, 3, 1], [3, 3, 1, 1, np.nan, 2, -0.5, 0]], np.float32)


def _both(f):
    t = f(torch, torch.tensor(V).to(torch.bfloat16))
    s = f(sf, sf.tensor(V.astype(ml_dtypes.bfloat16)))
    return s, t


def _np(x):
    return x.float().numpy() if isinstance(x, torch.Tensor) else x.numpy().astype(np.float32)


@pytest.mark.parametrize("f", [
    lambda L, x: L.sort(x, stable=True),
    lambda L, x: L.sort(x, dim=1, descending=True, stable=True),
    lambda L, x: (L.argsort(x, stable=True),),
    lambda L, x: (L.topk(x, 3)[0],),
    lambda L, x: (L.topk(x, 2, largest=False)[0],),
    lambda L, x: (L.kthvalue(x, 6)[0],),
    lambda L, x: L.unique(x, return_inverse=True, return_counts=True),
    lambda L, x: (L.searchsorted(L.sort(x[:, 1:4])[0], x[:, 1:4]),),
], ids=["sort", "sort_desc", "argsort", "topk", "topk_smallest", "kthvalue", "unique", "searchsorted"])
def test_bfloat16_ordering_with_nan_matches_torch(f):
    s, t = _both(f)
    for a, b in zip(s, t):
        np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("shape", [(0, 0), (0, 2), (2, 0)])
def test_searchsorted_empty_nd_matches_torch(shape):
    t = torch.searchsorted(torch.zeros(shape), torch.zeros(shape))
    s = sf.searchsorted(sf.zeros(shape), sf.zeros(shape))
    assert tuple(s.shape) == tuple(t.shape) and s.dtype == sf.int64
