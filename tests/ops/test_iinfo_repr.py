"""``print(torch.iinfo(dtype))`` as torch's: the limits in C's ``%g`` (six significant
digits), so int32's read ``-2.14748e+09`` and ``2.14748e+09`` (shardflow printed the full
integers); small types keep their exact limits (``-128``, ``255``)."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_prints_as_torch(name):
    assert repr(shardflow.iinfo(getattr(shardflow, name))) == repr(torch.iinfo(getattr(torch, name)))
    assert shardflow.iinfo(getattr(shardflow, name)).max == torch.iinfo(getattr(torch, name)).max  # values stay ints
