"""``Tensor.stride()`` of size-1 dims that NumPy strides 0 (``None`` indexing, ``expand``)
reads as torch's (docs/COMPAT.md "Strides of size-1 dims"): it was 0, so ``x[:, None].stride()``
printed ``(3, 0, 1)`` where torch prints ``(3, 3, 1)`` and ``dim_order()`` differed."""

import pytest
import torch

import shardflow

CASES = {
    "none_middle": lambda lib: lib.zeros(2, 3)[:, None],
    "none_front": lambda lib: lib.zeros(2, 3)[None],
    "none_last": lambda lib: lib.zeros(2, 3)[..., None],
    "none_twice": lambda lib: lib.zeros(2, 3)[:, None, :, None],
    "none_transposed": lambda lib: lib.zeros(2, 3).t()[:, None],
    "unsqueeze": lambda lib: lib.zeros(2, 3).unsqueeze(1),
    "expand_new_dim": lambda lib: lib.zeros(2, 3).expand(1, 2, 3),
    "expand_keeps_size_one": lambda lib: lib.zeros(1, 1, 3).expand(2, -1, -1),  # timm's cls token
    "expand_new_and_kept": lambda lib: lib.zeros(1, 1, 3).expand(4, 1, 1, 3),
    "expand_broadcast_dim": lambda lib: lib.zeros(4, 1).expand(4, 5),
    "view_size_one": lambda lib: lib.zeros(2, 3).view(2, 1, 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_stride_and_dim_order_of_size_one_dims_like_torch(name):
    make = CASES[name]
    sf, th = make(shardflow), make(torch)
    assert tuple(sf.shape) == tuple(th.shape)
    assert sf.stride() == th.stride(), name
    assert [sf.stride(d) for d in range(-sf.ndim, sf.ndim)] == [th.stride(d) for d in range(-th.ndim, th.ndim)]
    if 0 not in th.stride():  # an expanded dim: torch's dim_order skips it (not copied)
        assert sf.dim_order() == th.dim_order(), name
    assert sf.is_contiguous() == th.is_contiguous(), name


def test_values_read_through_the_reported_strides_are_the_tensors():
    """The reported stride of a size-1 dim addresses the same elements (its index is 0):
    ``as_strided`` with the tensor's own geometry gives the tensor back, as in torch."""
    for lib in (shardflow, torch):
        base = lib.arange(6.0).view(2, 3)
        v = base[:, None]
        again = base.as_strided(tuple(v.shape), v.stride(), v.storage_offset())
        assert again.tolist() == v.tolist() == [[[0.0, 1.0, 2.0]], [[3.0, 4.0, 5.0]]]
