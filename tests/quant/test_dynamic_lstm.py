"""``quantize_dynamic(model, {nn.LSTM})``: the LSTM becomes torch's DynamicQuantizedLSTM
(int8 weights, activations quantized per call; before, shardflow left it a float LSTM,
silently). Outputs and final states against torch's from the same float weights, the
printed module, and the ``torch.quantization`` path the recipes import."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(num_layers, bidirectional, batch_first, seed=0, i=5, h=6):
    torch.manual_seed(seed)
    # inside a container: quantize_dynamic swaps children (a bare LSTM stays float, in both)
    tm = torch.nn.Sequential(torch.nn.LSTM(i, h, num_layers, bidirectional=bidirectional,
                                           batch_first=batch_first))
    sm = sf.nn.Sequential(sf.nn.LSTM(i, h, num_layers, bidirectional=bidirectional, batch_first=batch_first))
    sm.load_state_dict({k: sf.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of torch.ao.quantization
        tq = torch.ao.quantization.quantize_dynamic(tm, {torch.nn.LSTM}, dtype=torch.qint8)
    sq = sf.ao.quantization.quantize_dynamic(sm, {sf.nn.LSTM}, dtype=sf.qint8)
    return tq[0], sq[0], tm[0]


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("num_layers, bidirectional, batch_first",
                         [(1, False, False), (2, False, False), (2, True, True), (1, True, False)])
def test_dynamic_lstm_matches_torch(num_layers, bidirectional, batch_first):
    tq, sq, float_lstm = _pair(num_layers, bidirectional, batch_first)
    torch.manual_seed(1)
    x = torch.randn(3, 7, 5) if batch_first else torch.randn(7, 3, 5)
    d = num_layers * (2 if bidirectional else 1)
    h0, c0 = torch.randn(d, 3, 6), torch.randn(d, 3, 6)
    to, (th, tc) = tq(x, (h0, c0))
    so, (sh, sc) = sq(sf.tensor(x.numpy()), (sf.tensor(h0.numpy()), sf.tensor(c0.numpy())))
    # the same int8 products and float32 gate arithmetic: float32 rounding apart
    for s, t, what in ((so, to, "output"), (sh, th, "h_n"), (sc, tc, "c_n")):
        assert tuple(s.shape) == tuple(t.shape), what
        np.testing.assert_allclose(_np(s), _np(t), rtol=1e-5, atol=1e-6, err_msg=what)
    to2, _ = tq(x)  # zero initial states
    so2, _ = sq(sf.tensor(x.numpy()))
    np.testing.assert_allclose(_np(so2), _np(to2), rtol=1e-5, atol=1e-6)
    # the int8 error is far above that tolerance: a float LSTM would not pass
    assert np.abs(_np(float_lstm(x, (h0, c0))[0]) - _np(to)).max() > 1e-3


def test_dynamic_lstm_is_quantized_and_prints_as_torch():
    tq, sq, _ = _pair(1, False, False)
    assert repr(sq) == repr(tq) == "DynamicQuantizedLSTM(5, 6)"
    tq2, sq2, _ = _pair(2, True, True)
    assert repr(sq2) == repr(tq2)
    x = np.random.default_rng(0).standard_normal((4, 2, 5)).astype(np.float32)
    sm = sf.nn.Sequential(sf.nn.LSTM(5, 6))
    float_out = _np(sm[0](sf.tensor(x))[0])
    q_out = _np(sf.ao.quantization.quantize_dynamic(sm, {sf.nn.LSTM})[0](sf.tensor(x))[0])
    assert 0 < np.abs(float_out - q_out).max() < 0.05  # int8 weights: close, not equal


def test_quantization_path_and_refusals():
    import shardflow.quantization as q

    assert q.quantize_dynamic is sf.ao.quantization.quantize_dynamic
    assert sf.quantization.default_dynamic_qconfig is sf.ao.quantization.default_dynamic_qconfig
    _, sq, _ = _pair(2, False, False)
    with pytest.raises(NotImplementedError, match="PackedSequence"):
        packed = sf.nn.utils.rnn.pack_padded_sequence(sf.zeros(3, 1, 5), [3])
        sq(packed)
    m = sf.nn.Sequential(sf.nn.LSTM(5, 6, 2, dropout=0.5))
    qm = sf.ao.quantization.quantize_dynamic(m, {sf.nn.LSTM})[0]
    with pytest.raises(NotImplementedError, match="eval"):
        qm(sf.zeros(3, 1, 5))
    qm.eval()
    assert qm(sf.zeros(3, 1, 5))[0].shape == (3, 1, 6)
    with pytest.raises(NotImplementedError, match="proj_size"):
        sf.ao.quantization.quantize_dynamic(sf.nn.Sequential(sf.nn.LSTM(5, 6, proj_size=3)), {sf.nn.LSTM})
