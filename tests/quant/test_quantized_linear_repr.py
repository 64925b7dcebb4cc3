"""Quantized Linear layers print as torch's: one line, the packed weights hidden, the dtype
and scheme named (``DynamicQuantizedLinear(in_features=8, out_features=19,
dtype=torch.qint8, qscheme=torch.per_tensor_affine)``; the static ``QuantizedLinear`` with
its output ``scale`` as a Python float, ``zero_point`` and ``qscheme``). shardflow printed
``dtype=qint8`` and a ``(_packed_params): PackedParams(...)`` child (found by the dynamic
quantization tutorial's ``print(quantized_model)``)."""

import re

import numpy as np
import pytest

import shardflow

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _as_torch(text: str) -> str:
    return text.replace("shardflow.", "torch.")


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_prints_as_torch(per_channel):
    printed = []
    for lib in (torch, shardflow):
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU(), lib.nn.LSTM(2, 2))
        spec = {lib.nn.Linear: lib.ao.quantization.per_channel_dynamic_qconfig} if per_channel else {lib.nn.Linear}
        printed.append(repr(lib.ao.quantization.quantize_dynamic(model, spec, dtype=lib.qint8)))
    assert _as_torch(printed[1]) == printed[0]
    assert "qscheme=torch.per_channel_affine" in printed[0] if per_channel else "per_tensor_affine" in printed[0]


def test_static_linear_prints_as_torch():
    assert _as_torch(repr(shardflow.ao.nn.quantized.Linear(3, 2))) == repr(torch.ao.nn.quantized.Linear(3, 2))
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    printed = []
    for lib in (torch, shardflow):
        aq = lib.ao.quantization
        lib.manual_seed(0)
        model = lib.nn.Sequential(aq.QuantStub(), lib.nn.Linear(4, 3), aq.DeQuantStub()).eval()
        model.qconfig = aq.get_default_qconfig("fbgemm")
        aq.prepare(model, inplace=True)
        model(lib.tensor(x))
        aq.convert(model, inplace=True)
        printed.append(repr(model[1]))
    th, sf = printed[0], _as_torch(printed[1])
    number = re.compile(r"\d+\.\d+(?:e-?\d+)?")
    assert number.sub("#", sf) == number.sub("#", th)
    np.testing.assert_allclose([float(v) for v in number.findall(sf)], [float(v) for v in number.findall(th)],
                               rtol=1e-6)
