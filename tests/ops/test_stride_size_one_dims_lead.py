"""``Tensor.stride()`` reports torch's stride for a size-1 dim that NumPy stores with stride 0
(a new axis from ``x[None]``, ``expand`` to a new leading 1): torch gives the stride
``unsqueeze`` gives (the next dim's stride times its size, 1 at the end); a broadcast dim of
size > 1 keeps stride 0 in both."""

import pytest
import torch

import shardflow

CASES = [
    lambda lib: lib.arange(6.0).view(2, 3).expand(1, 2, 3),
    lambda lib: lib.arange(6.0).view(2, 3).expand(4, 2, 3),
    lambda lib: lib.arange(6.0).view(2, 3)[:, :1].expand(2, 3),
    lambda lib: lib.arange(6.0).view(2, 3)[None],
    lambda lib: lib.arange(6.0).view(2, 3)[None, None],
    lambda lib: lib.arange(6.0).view(2, 3)[:, None],
    lambda lib: lib.arange(6.0).view(2, 3)[..., None],
    lambda lib: lib.arange(6.0).view(2, 3).T[None],
    lambda lib: lib.ones(1, 3).expand(5, 1, 3),
    lambda lib: lib.tensor(2.0)[None],
    lambda lib: lib.ones(3)[None, :, None].expand(1, 3, 4),
    lambda lib: lib.arange(6.0).view(2, 3).unsqueeze(1).expand(2, 1, 3),
]


@pytest.mark.parametrize("make", CASES)
def test_stride_like_torch(make):
    ours, theirs = make(shardflow), make(torch)
    assert ours.stride() == theirs.stride()
    assert [ours.stride(d) for d in range(ours.dim())] == list(theirs.stride())
    assert ours.is_contiguous() == theirs.is_contiguous()


def test_as_strided_with_reported_strides_reads_the_same_elements():
    # the reported stride of a size-1 dim never reaches an element: as_strided with it reads
    # the values the view holds
    for lib in (shardflow, torch):
        x = lib.arange(6.0).view(2, 3)
        v = x[None]
        again = x.as_strided(v.size(), v.stride(), v.storage_offset())
        assert again.tolist() == v.tolist()
