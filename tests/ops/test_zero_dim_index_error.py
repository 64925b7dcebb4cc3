"""Indexing a 0-d tensor with an int (``loss.data[0]``, the pre-0.4 idiom of old tutorials
such as yunjey's pytorch-tutorial) is an IndexError that says to use ``item()``, as PyTorch's."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow])
def test_int_index_of_a_zero_dim_tensor_points_at_item(lib):
    loss = lib.tensor(2.5)
    with pytest.raises(IndexError, match=r"invalid index of a 0-dim tensor.*item\(\)"):
        loss.data[0]


@pytest.mark.parametrize("lib", [torch, shardflow])
def test_too_many_indices_elsewhere_keeps_its_message(lib):
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 1"):
        lib.ones(2)[0, 0]


@pytest.mark.parametrize("index", [None, ...])
def test_zero_dim_indexing_that_torch_allows_still_works(index):
    assert shardflow.tensor(2.5)[index].tolist() == torch.tensor(2.5)[index].tolist()
