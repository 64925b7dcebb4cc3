"""A one-element integer tensor is a size in the factories, as in torch 2.13: hunkim's
PyTorchZeroToAll ``13_3_pack_pad.py`` pads with ``torch.zeros((len(seqs),
seq_lengths.max()))`` (shardflow raised TypeError). A float tensor is still torch's TypeError
and a negative one its RuntimeError."""

import pytest
import torch

import shardflow

LIBS = pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])


@LIBS
@pytest.mark.parametrize("make, shape", [
    (lambda lib: lib.zeros((3, lib.tensor(2))), (3, 2)),
    (lambda lib: lib.zeros(3, lib.tensor(2, dtype=lib.int32)), (3, 2)),
    (lambda lib: lib.ones(lib.tensor(2), 3), (2, 3)),
    (lambda lib: lib.zeros(lib.tensor(4)), (4,)),
    (lambda lib: lib.zeros((3, lib.tensor([2]))), (3, 2)),
    (lambda lib: lib.randn(3, lib.LongTensor([5, 2]).max()), (3, 5)),
    (lambda lib: lib.full((lib.tensor(2), 2), 7.0), (2, 2)),
])
def test_integer_tensor_sizes(lib, make, shape):
    t = make(lib)
    assert tuple(t.shape) == shape and t.dtype == lib.float32


@LIBS
def test_non_integer_or_negative_tensor_sizes_raise(lib):
    with pytest.raises(TypeError):
        lib.zeros((3, lib.tensor(2.0)))
    with pytest.raises(RuntimeError, match="Dimension size must be non-negative"):
        lib.zeros((3, lib.tensor(-2)))
