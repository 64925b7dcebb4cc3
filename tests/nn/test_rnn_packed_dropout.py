"""Dropout between the layers of an RNN/GRU/LSTM fed a ``PackedSequence``: torch draws the
mask over the packed rows (``(sum(lengths), D*H)``, time-major packed order), not over the
padded batch. shardflow drew it over the padded ``(T, B, D*H)`` batch, so a packed
multi-layer LSTM with ``dropout`` in training (bentrevett's sentiment LSTM) dropped other
entries and left the generator at another state (every later draw differed too).

Also ``pack_padded_sequence``'s argument errors (lengths not one per sequence, a 2-D lengths
tensor): RuntimeError as torch's, where shardflow raised ValueError."""

import numpy as np
import pytest
import torch

import shardflow


def _run(lib, kind, bidirectional, batch_first):
    lib.manual_seed(0)
    layer = getattr(lib.nn, kind)(3, 4, 2, dropout=0.5, bidirectional=bidirectional, batch_first=batch_first)
    x = lib.randn(2, 5, 3) if batch_first else lib.randn(5, 2, 3)
    x.requires_grad_(True)
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([3, 5]), batch_first=batch_first,
                                                   enforce_sorted=False)
    out, state = layer(packed)
    h_n = state[0] if kind == "LSTM" else state
    y, lengths = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)
    (y.sin().sum() + h_n.cos().sum()).backward()
    grads = [x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]
    return y.detach().numpy(), h_n.detach().numpy(), grads, lib.rand(3).numpy()


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_interlayer_dropout_like_torch(kind, bidirectional, batch_first):
    want = _run(torch, kind, bidirectional, batch_first)
    got = _run(shardflow, kind, bidirectional, batch_first)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(got[3], want[3])  # the generator is where torch's is


def test_packed_dropout_off_in_eval_draws_nothing():
    for lib in (torch, shardflow):
        lib.manual_seed(1)
        layer = lib.nn.LSTM(3, 4, 2, dropout=0.5).eval()
        packed = lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 2, 3), [4, 2])
        layer(packed)
    np.testing.assert_array_equal(shardflow.rand(2).numpy(), torch.rand(2).numpy())


# -- pack_padded_sequence's argument errors: RuntimeError, as torch's (shardflow raised ValueError)
BAD_LENGTHS = {
    "one length for a batch of two": lambda lib: ([3], {}),
    "a 2-D lengths tensor": lambda lib: (lib.tensor([[3, 1]]), {}),
    "batch_first with time-first lengths": lambda lib: ([2, 1], {"batch_first": True}),
}


@pytest.mark.parametrize("case", list(BAD_LENGTHS))
def test_pack_padded_sequence_bad_lengths_raise_like_torch(case):
    for lib in (torch, shardflow):
        lengths, kwargs = BAD_LENGTHS[case](lib)
        with pytest.raises(RuntimeError, match="len\\(lengths\\)|1D CPU int64 tensor") as err:
            lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 4), lengths, **kwargs)
        if lib is shardflow:
            assert "got" in str(err.value)
