"""Complex ``nn.RNN``/``LSTM``/``GRU`` (and their cells) against torch: outputs and every
gradient. The fused recurrence's backward (``ops/recurrence.py``) had no conjugates, so a
complex RNN's gradients were ``J^T g`` instead of torch's ``conj(J)^T g`` (errors of the
gradients' own size). ``nonlinearity='relu'`` refuses complex with torch's message."""

import numpy as np
import pytest
import torch

import shardflow as sf

MODELS = {
    "rnn_2_layers": lambda L: L.nn.RNN(3, 2, num_layers=2, dtype=L.cfloat),
    "lstm": lambda L: L.nn.LSTM(3, 2, dtype=L.cfloat),
    "lstm_proj": lambda L: L.nn.LSTM(3, 4, proj_size=2, dtype=L.cfloat),
    "gru_bidirectional": lambda L: L.nn.GRU(3, 2, bidirectional=True, dtype=L.cfloat),
    "rnn_cell": lambda L: L.nn.RNNCell(3, 2, dtype=L.cfloat),
    "gru_cell": lambda L: L.nn.GRUCell(3, 2, dtype=L.cfloat),
}


def _run(L, name):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 2, 3)) + 1j * rng.standard_normal((4, 2, 3))).astype(np.complex64)
    L.manual_seed(0)
    model = MODELS[name](L)
    xt = L.tensor(x[0] if "cell" in name else x, requires_grad=True)
    out = model(xt)
    out = out[0] if isinstance(out, tuple) else out
    g = np.random.default_rng(3).standard_normal(tuple(out.shape)).astype(np.complex64) * (1 + 0.5j)
    out.backward(L.tensor(g))
    return [out.detach().numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_complex_recurrent_layer_matches_torch(name):
    got, want = _run(sf, name), _run(torch, name)
    assert len(got) == len(want)
    for a, b in zip(got, want):  # float32 through complex tanh: relative to the array's scale
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())


def test_complex_relu_rnn_refused_like_torch():
    x = np.ones((2, 1, 3), np.complex64)
    for L in (torch, sf):
        with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
            L.nn.RNN(3, 2, nonlinearity="relu", dtype=L.cfloat)(L.tensor(x))
