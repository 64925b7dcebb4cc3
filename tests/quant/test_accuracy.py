"""Quantized models keep float32 accuracy (within 1 point) on the digits task (MLP, 8x8) and
its MNIST-style version (LeNet-5, 28x28): post-training static, dynamic and QAT; and a
quantized model survives a state_dict save / load."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.ao.quantization as Q

from ._tasks import accuracy, digits_arrays, make_model, train

pytestmark = pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated:UserWarning")

TASKS = {"digits-mlp": ("mlp", False, 300), "mnist_style-lenet": ("lenet", True, 150)}


@pytest.fixture(scope="module", params=list(TASKS))
def trained(request):
    kind, mnist_style, steps = TASKS[request.param]
    xtr, ytr = digits_arrays(True, mnist_style)
    xte, yte = digits_arrays(False, mnist_style)
    model = train(make_model(kind), xtr, ytr, steps)
    acc = accuracy(model, xte, yte)
    assert acc > 0.9, f"the float model did not train ({acc:.3f}); the comparison would be vacuous"
    return kind, model, acc, (xtr, ytr, xte, yte)


def _ptq(model, xtr, qconfig):
    wrapped = Q.QuantWrapper(model)
    wrapped.qconfig = qconfig
    prepared = Q.prepare(wrapped.eval())
    with sf.no_grad():
        for i in range(0, 512, 128):  # 512 calibration images
            prepared(sf.tensor(xtr[i:i + 128]))
    return Q.convert(prepared)


@pytest.mark.parametrize("backend", ["x86", "qnnpack"])
def test_post_training_static_quantization_keeps_accuracy(trained, backend):
    kind, model, float_acc, (xtr, _, xte, yte) = trained
    q = _ptq(model, xtr, Q.get_default_qconfig(backend))
    assert isinstance(q.module.get_submodule("classifier.1" if kind == "lenet" else "net.1"),
                      sf.ao.nn.quantized.Linear)
    acc = accuracy(q, xte, yte)
    assert acc >= float_acc - 0.01, (kind, backend, float_acc, acc)


def test_dynamic_quantization_keeps_accuracy(trained):
    kind, model, float_acc, (_, _, xte, yte) = trained
    q = Q.quantize_dynamic(model, {sf.nn.Linear}, dtype=sf.qint8)
    assert sum(isinstance(m, sf.ao.nn.quantized.dynamic.Linear) for m in q.modules()) == 3
    assert accuracy(q, xte, yte) >= float_acc - 0.01


def test_quantization_aware_training_keeps_accuracy(trained):
    kind, model, float_acc, (xtr, ytr, xte, yte) = trained
    start = make_model(kind)
    start.load_state_dict(model.state_dict())
    wrapped = Q.QuantWrapper(start)
    wrapped.qconfig = Q.get_default_qat_qconfig("x86")
    qat = Q.prepare_qat(wrapped.train())
    train(qat, xtr, ytr, 40, lr=5e-4, seed=1)  # fine-tune with fake quantization
    q = Q.convert(qat.eval())
    acc = accuracy(q, xte, yte)
    assert acc >= float_acc - 0.01, (kind, float_acc, acc)


def test_quantized_state_dict_round_trip(trained, tmp_path):
    kind, model, _, (xtr, _, xte, _) = trained
    q = _ptq(model, xtr, Q.get_default_qconfig("x86"))
    sd = q.state_dict()
    weights = [k for k in sd if k.endswith("_packed_params.weight")]
    assert weights and all(sd[k].numpy().dtype == np.int8 for k in weights)
    sf.save(sd, tmp_path / "q.safetensors")
    # a model of the same structure, calibrated on other data: different qparams until loaded
    other = _ptq(make_model(kind, seed=1), xte[::-1], Q.get_default_qconfig("x86"))
    x = sf.tensor(xte[:64])
    assert not np.array_equal(other(x).numpy(), q(x).numpy())
    other.load_state_dict(sf.load(tmp_path / "q.safetensors"))
    np.testing.assert_array_equal(other(x).numpy(), q(x).numpy())
    float_bytes = sum(p.numpy().nbytes for p in model.parameters())
    q_bytes = sum(v.numpy().nbytes for v in sd.values())
    assert q_bytes < 0.3 * float_bytes, (q_bytes, float_bytes)
