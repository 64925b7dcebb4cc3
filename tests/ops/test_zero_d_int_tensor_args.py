"""0-d integer Tensors where torch takes an int (it converts through ``__index__``):
``split``'s size, ``chunk``'s count, ``roll``'s shifts / dims and a reduction's ``dim``
raised "iteration over a 0-d tensor" in shardflow (session 40, compat-audio; a length
taken as ``lengths[0]`` or ``x.argmax()``)."""

import numpy as np
import pytest
import torch

import shardflow as sf

CALLS = {
    "split": lambda L, x: x.split(L.tensor(4)),
    "torch.split": lambda L, x: L.split(x, L.tensor(4), dim=L.tensor(0)),
    "chunk": lambda L, x: x.chunk(L.tensor(3)),
    "roll": lambda L, x: (x.roll(L.tensor(2)),),
    "roll dims": lambda L, x: (x.view(2, 5).roll(L.tensor(1), L.tensor(1)),),
    "sum dim": lambda L, x: (x.view(2, 5).sum(L.tensor(1)),),
    "mean dim": lambda L, x: (x.view(2, 5).float().mean(L.tensor(-1)),),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_like_torch(name):
    want = CALLS[name](torch, torch.arange(10))
    got = CALLS[name](sf, sf.arange(10))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_float_tensor_split_size_is_int_of_it_as_torch():
    """torch's ``Tensor.split`` takes ``int(split_size)`` of any 0-d Tensor."""
    want = torch.arange(10).split(torch.tensor(4.0))
    got = sf.arange(10).split(sf.tensor(4.0))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
