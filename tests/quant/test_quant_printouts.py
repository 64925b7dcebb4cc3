"""What the static quantization tutorial prints, as torch prints it: qconfigs (the factory
classes by their ``torch.ao.quantization`` paths, qschemes and dtypes as objects, the x86
QAT activation without a ``dtype`` keyword), observers (``min_val=inf, max_val=-inf``),
``FakeQuantize`` / ``FusedMovingAvgObsFakeQuantize`` (their buffers as tensors), the QAT
``ConvReLU2d``, ``QuantizedConv2d`` on one line (non-default options only, the scale as a
Python float), float ``ReLU`` / ``Identity`` kept as they are in a converted model, and
``QConfigMapping``. shardflow printed ``functools.partial(MinMaxObserver, ...)``,
``qscheme='per_tensor_symmetric'``, ``MinMaxObserver(dtype=..., quant_min=...)``,
``QATConvReLU2d``, a ``(_packed_params)`` child, ``(float_module)`` children; and
``fuse_modules_qat`` / ``freeze_bn_stats`` / ``get_default_qat_qconfig_mapping`` were
missing (programs/gen_s40/qat_tutorial.py)."""

import re

import numpy as np
import pytest

import shardflow

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

_NUMBER = re.compile(r"\d+\.\d+(?:e-?\d+)?")


def _same(th: str, sf: str, rtol=1e-6):
    sf = sf.replace("shardflow.", "torch.")
    assert _NUMBER.sub("#", sf) == _NUMBER.sub("#", th)
    np.testing.assert_allclose([float(v) for v in _NUMBER.findall(sf)], [float(v) for v in _NUMBER.findall(th)],
                               rtol=rtol)


@pytest.mark.parametrize("which", ["default_qconfig", "default_qat_qconfig", "x86", "qnnpack", "qat x86",
                                   "qat qnnpack", "default_fused_wt_fake_quant"])
def test_qconfigs_print_as_torch(which):
    def get(lib):
        aq = lib.ao.quantization
        if which.startswith("qat "):
            return aq.get_default_qat_qconfig(which[4:])
        if which in ("x86", "qnnpack"):
            return aq.get_default_qconfig(which)
        return getattr(aq, which)
    assert str(get(shardflow)).replace("shardflow.", "torch.") == str(get(torch))


def test_observers_and_fake_quantizers_print_as_torch():
    for make in (lambda aq: aq.MinMaxObserver(), lambda aq: aq.MovingAverageMinMaxObserver(),
                 lambda aq: aq.PerChannelMinMaxObserver(), lambda aq: aq.FakeQuantize(),
                 lambda aq: aq.default_per_channel_weight_fake_quant(),
                 lambda aq: aq.get_default_qat_qconfig("x86").activation(),
                 lambda aq: aq.get_default_qat_qconfig("x86").weight()):
        th, sf = make(torch.ao.quantization), make(shardflow.ao.quantization)
        _same(repr(th), repr(sf))
        x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
        th(torch.tensor(x))
        sf(shardflow.tensor(x))
        _same(repr(th), repr(sf))


def test_qat_fused_and_converted_convs_print_as_torch():
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 6)).astype(np.float32)
    printed = []
    for lib in (torch, shardflow):
        aq = lib.ao.quantization
        lib.manual_seed(0)
        m = lib.nn.Sequential(aq.QuantStub(), lib.nn.Conv2d(4, 4, 3, padding=1, groups=2), lib.nn.ReLU(),
                              lib.nn.Conv2d(4, 3, 1, bias=False), lib.nn.Identity(), aq.DeQuantStub())
        aq.fuse_modules_qat(m, [["1", "2"]], inplace=True)
        m.qconfig = aq.get_default_qat_qconfig("x86")
        aq.prepare_qat(m.train(), inplace=True)
        m(lib.tensor(x))
        m.apply(lib.nn.intrinsic.qat.freeze_bn_stats)
        qat = repr(m)
        q = aq.convert(m.eval())
        printed.append((qat, repr(q)))
    for th, sf in zip(*printed, strict=True):
        _same(th, sf, rtol=1e-5)
    assert "QuantizedConvReLU2d(4, 4, kernel_size=(3, 3), stride=(1, 1), scale=" in printed[0][1]


def test_fuse_modules_qat_refuses_conv_bn_by_name():
    m = shardflow.nn.Sequential(shardflow.nn.Conv2d(2, 2, 1), shardflow.nn.BatchNorm2d(2), shardflow.nn.ReLU())
    with pytest.raises(NotImplementedError, match="ConvBn2d / ConvBnReLU2d"):
        shardflow.ao.quantization.fuse_modules_qat(m, ["0", "1", "2"])


def test_qconfig_mapping_prints_as_torch():
    for make in (lambda aq: aq.QConfigMapping(), lambda aq: aq.get_default_qat_qconfig_mapping("x86").__class__()
                 .set_global(aq.default_qconfig).set_module_name("fc", None)):
        assert repr(make(shardflow.ao.quantization)).replace("shardflow.", "torch.") == repr(make(torch.ao.quantization))
    m = shardflow.ao.quantization.get_default_qat_qconfig_mapping("x86")
    assert str(m.global_qconfig) == str(shardflow.ao.quantization.get_default_qat_qconfig("x86"))
    assert shardflow.ao.quantization.QConfigMapping.from_dict(m.to_dict()).to_dict() == m.to_dict()
