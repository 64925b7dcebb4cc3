"""``torch.tensor(values, dtype=<small int>)`` with a value out of the dtype's range raises
torch's RuntimeError ("value cannot be converted to type int8 without overflow"); shardflow
let NumPy's OverflowError through. Not matched: torch wraps a negative value given for uint8
(``-1`` becomes 255); shardflow refuses it with the same RuntimeError."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("dtype, values", [("int8", [1, -22, 333]), ("uint8", [300]), ("int16", [70000, 1])])
def test_out_of_range_python_ints_raise_runtime_error_like_torch(dtype, values):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype} without overflow"):
        torch.tensor(values, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype} without overflow"):
        shardflow.tensor(values, dtype=getattr(shardflow, dtype))


def test_in_range_values_are_kept():
    assert shardflow.tensor([1, -22, 127], dtype=shardflow.int8).tolist() == [1, -22, 127]
    assert shardflow.tensor([255], dtype=shardflow.uint8).tolist() == [255]
