"""The legacy constructors' sizes may be one-element integer Tensors, NumPy integers or bools,
as torch's ``new()`` reads them (session 40, compat-audio): NVIDIA tacotron2's
``TextMelCollate`` does ``torch.LongTensor(len(batch), max_input_len)`` with
``max_input_len = input_lengths[0]`` (a 0-d tensor from ``torch.sort``), which shardflow
refused with a TypeError."""

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("ctor", ["LongTensor", "FloatTensor", "Tensor"])
def test_tensor_and_numpy_sizes_like_torch(ctor):
    for make in (lambda L: (3, L.tensor(6)), lambda L: (L.tensor(2), 3), lambda L: (2, L.tensor([3])),
                 lambda L: (2, np.int64(3)), lambda L: (2, True), lambda L: (2, L.tensor(3, dtype=L.int32))):
        want = getattr(torch, ctor)(*make(torch))
        got = getattr(sf, ctor)(*make(sf))
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).rsplit(".", 1)[-1] == str(want.dtype).rsplit(".", 1)[-1]


@pytest.mark.parametrize("bad", [3.0, "float tensor"])
def test_float_sizes_still_refused(bad):
    for lib in (torch, sf):
        with pytest.raises(TypeError):
            lib.LongTensor(2, lib.tensor(3.0) if bad == "float tensor" else bad)


def test_tacotron2_text_mel_collate():
    batch = [(sf.arange(i + 2),) for i in (1, 3, 0)]
    input_lengths, ids_sorted_decreasing = sf.sort(sf.LongTensor([len(x[0]) for x in batch]), dim=0,
                                                   descending=True)
    max_input_len = input_lengths[0]
    text_padded = sf.LongTensor(len(batch), max_input_len)
    text_padded.zero_()
    for i in range(len(ids_sorted_decreasing)):
        text = batch[ids_sorted_decreasing[i]][0]
        text_padded[i, :text.size(0)] = text
    assert text_padded.tolist() == [[0, 1, 2, 3, 4], [0, 1, 2, 0, 0], [0, 1, 0, 0, 0]]
