"""Found by printing the same modules on PyTorch 2.13 and shardflow (session 30):
``TransformerEncoder`` warns as PyTorch's when it would not take the nested-tensor path
(every ``nn.Transformer`` with ``batch_first=False`` prints it), and ``AvgPool1d`` keeps its
sizes as 1-tuples."""

import warnings

import pytest
import torch

import shardflow as sf


def _warnings(make):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = make()
    return m, [str(w.message) for w in rec if "nested" in str(w.message)]


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_first=True), dict(batch_first=True, norm_first=True),
                                    dict(batch_first=True, activation=lambda x: x), dict(batch_first=True, bias=False)],
                         ids=["seq_first", "batch_first", "norm_first", "custom_activation", "no_bias"])
@pytest.mark.parametrize("nhead", [2, 1])
def test_transformer_encoder_warns_as_torch(kwargs, nhead):
    got = []
    for lib in (torch, sf):
        layer = lib.nn.TransformerEncoderLayer(4, nhead, 8, **kwargs)
        enc, msgs = _warnings(lambda: lib.nn.TransformerEncoder(layer, 1))
        got.append((msgs, enc.use_nested_tensor, enc.enable_nested_tensor, layer.activation_relu_or_gelu))
        assert _warnings(lambda: lib.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False))[1] == []
    assert got[0] == got[1]


def test_avg_pool1d_keeps_one_tuples():
    for args in [(3,), (3, 2, 1), ((2,), (1,))]:
        assert repr(sf.nn.AvgPool1d(*args)) == repr(torch.nn.AvgPool1d(*args))
    x = torch.arange(10.0).reshape(1, 1, 10)
    assert sf.nn.AvgPool1d(3, 2, 1)(sf.tensor(x.numpy())).tolist() == torch.nn.AvgPool1d(3, 2, 1)(x).tolist()
