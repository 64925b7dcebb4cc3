"""A Python scalar written into a tensor that cannot hold it, against PyTorch (found by
tests/ops/fuzz): ``masked_fill`` / ``index_fill`` / ``fill_`` / ``full`` of NaN into an
integer tensor wrote INT_MIN, 300 into uint8 wrote 44, 1e300 into float32 wrote inf, all
silently; torch raises RuntimeError "value cannot be converted to type ... without
overflow". What torch accepts still works: -1 into uint8 wraps to 255, 2.5 into int64
truncates, inf into float16, anything into bool."""

import numpy as np
import pytest
import torch

import shardflow as sf

OPS = {
    "masked_fill": lambda L, t, v: t.masked_fill(L.tensor([True, False]), v),
    "masked_fill_": lambda L, t, v: t.masked_fill_(L.tensor([True, False]), v),
    "index_fill": lambda L, t, v: L.index_fill(t, 0, L.tensor([1]), v),
    "fill_": lambda L, t, v: t.fill_(v),
    "full": lambda L, t, v: L.full((2,), v, dtype=t.dtype),
}
BAD = [(float("nan"), "int64"), (float("inf"), "int32"), (2 ** 63, "int64"), (300, "uint8"), (-129, "int8"),
       (1e300, "float32"), (70000.0, "float16")]
GOOD = [(-1, "uint8"), (2.5, "int64"), (float("inf"), "float16"), (float("nan"), "bool"), (255, "uint8"),
        (-2 ** 63, "int64"), (float("nan"), "float32")]


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("value,dtype", BAD)
def test_overflowing_fill_value_raises_like_torch(name, value, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        OPS[name](torch, torch.zeros(2, dtype=getattr(torch, dtype)), value)
    with pytest.raises(RuntimeError, match="without overflow"):
        OPS[name](sf, sf.zeros(2, dtype=getattr(sf, dtype)), value)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("value,dtype", GOOD)
def test_fill_values_torch_accepts_match(name, value, dtype):
    t = OPS[name](torch, torch.zeros(2, dtype=getattr(torch, dtype)), value)
    s = OPS[name](sf, sf.zeros(2, dtype=getattr(sf, dtype)), value)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(s.numpy(), t.numpy())
