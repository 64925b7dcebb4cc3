"""int8 GEMM, dynamic Linear and static PTQ / QAT modules against torch.ao (quantized weights,
scales and zero points equal; outputs within 1 LSB)."""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.ao.quantization as Q
import shardflow.nn as snn
from shardflow.quant import int8_gemm

tq = torch.ao.quantization
pytestmark = [pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:.*are deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:.*qnnpack incorrectly ignores:UserWarning")]


@pytest.fixture
def engine():
    old_t, old_s = torch.backends.quantized.engine, Q.get_engine()

    def set_engine(name):
        torch.backends.quantized.engine = name
        Q.set_engine(name)

    yield set_engine
    torch.backends.quantized.engine = old_t
    Q.set_engine(old_s)


@pytest.mark.parametrize("backend", ["blas", "numpy", "numba"])
@pytest.mark.parametrize("k", [37, 514, 1500])  # 1500: three exact float32 chunks
def test_int8_matmul_is_exact_int32_accumulation(backend, k):
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(k)
    a = rng.integers(0, 256, (9, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (11, k)).astype(np.int8)
    w[:, :3] = -128  # worst-case magnitudes
    a[:, :3] = 255
    for a_zp, w_zp in ((0, 0), (200, 0), (7, rng.integers(-5, 5, 11))):
        ref = (a.astype(np.int64) - a_zp) @ (w.astype(np.int64) - np.asarray(w_zp)[..., None] if np.ndim(w_zp) else w.astype(np.int64) - w_zp).T
        got = int8_gemm.int8_matmul(a, a_zp, w, w_zp, backend=backend)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, ref)


def _float_linear_pair(i, o, seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Linear(i, o)
    s = snn.Linear(i, o)
    s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, s


@pytest.mark.parametrize("eng", ["x86", "qnnpack"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_matches_torch_quantize_dynamic(engine, eng, per_channel):
    engine(eng)
    t, s = _float_linear_pair(600, 33)  # 600 > 514: the exact GEMM runs in two chunks
    tspec = {torch.nn.Linear: tq.per_channel_dynamic_qconfig if per_channel else tq.default_dynamic_qconfig}
    sspec = {snn.Linear: Q.per_channel_dynamic_qconfig if per_channel else Q.default_dynamic_qconfig}
    tq_lin = tq.quantize_dynamic(torch.nn.Sequential(t), tspec, dtype=torch.qint8)[0]
    sq_lin = Q.quantize_dynamic(snn.Sequential(s), sspec, dtype=sf.qint8)[0]
    assert isinstance(sq_lin, sf.ao.nn.quantized.dynamic.Linear)
    tw, sw = tq_lin.weight(), sq_lin.weight()
    np.testing.assert_array_equal(sw.int_repr().numpy(), tw.int_repr().numpy())
    if per_channel:
        np.testing.assert_array_equal(sw.q_per_channel_scales().numpy(), tw.q_per_channel_scales().numpy())
    else:
        assert (sw.q_scale(), sw.q_zero_point()) == (tw.q_scale(), tw.q_zero_point())
    rng = np.random.default_rng(0)
    for shape in ((7, 600), (2, 3, 600)):
        x = (rng.standard_normal(shape) * 2 + 0.3).astype(np.float32)
        y, yt = sq_lin(sf.tensor(x)).numpy(), tq_lin(torch.tensor(x)).detach().numpy()
        assert y.shape == yt.shape
        # same integers, same scales: the float outputs agree to rounding
        np.testing.assert_allclose(y, yt, rtol=1e-5, atol=1e-5 * np.abs(yt).max())


def _pair(seed=0, fused=False):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.Flatten(), torch.nn.Linear(64, 10))
    s = snn.Sequential(snn.Conv2d(1, 4, 3, padding=1), snn.ReLU(), snn.MaxPool2d(2), snn.Flatten(),
                       snn.Linear(64, 10))
    s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    if fused:  # Conv2d + ReLU -> ConvReLU2d (eval for PTQ; torch's QAT fusion needs train mode)
        t = tq.fuse_modules_qat(t.train(), [["0", "1"]]) if fused == "qat" else tq.fuse_modules(t.eval(), [["0", "1"]])
        s = Q.fuse_modules(s, [["0", "1"]])
        assert isinstance(s[0], sf.ao.nn.intrinsic.ConvReLU2d) and isinstance(s[1], snn.Identity)
        assert list(s.state_dict()) == list(t.state_dict())
    return tq.QuantWrapper(t), Q.QuantWrapper(s)


def _compare_quantized_layers(tc, sc, x):
    for i in (0, 4):
        tw, sw = tc.module[i].weight(), sc.module[i].weight()
        np.testing.assert_array_equal(sw.int_repr().numpy(), tw.int_repr().numpy())
        np.testing.assert_allclose(float(sc.module[i].scale.numpy()[0]), tc.module[i].scale, rtol=1e-6)
        assert int(sc.module[i].zero_point.numpy()[0]) == tc.module[i].zero_point
    tx, sx = tc.quant(torch.tensor(x)), sc.quant(sf.tensor(x))
    np.testing.assert_array_equal(sx.int_repr().numpy(), tx.int_repr().numpy())
    for i in range(5):  # layer by layer, integers within 1 LSB
        tx, sx = tc.module[i](tx), sc.module[i](sx)
        diff = np.abs(tx.int_repr().numpy().astype(int) - sx.int_repr().numpy().astype(int))
        assert diff.max() <= 1, (i, diff.max())
        assert sx.q_scale() == pytest.approx(tx.q_scale(), rel=1e-6)
    out, ref = sc(sf.tensor(x)).numpy(), tc(torch.tensor(x)).numpy()
    np.testing.assert_allclose(out, ref, atol=tc.module[4].scale * 1.001)


@pytest.mark.parametrize("per_channel,fused", [(False, False), (True, False), (True, True)])
def test_static_ptq_matches_torch_layer_by_layer(engine, per_channel, fused):
    engine("x86")
    t, s = _pair(fused=fused)
    t.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                           weight=tq.default_per_channel_weight_observer if per_channel else tq.default_weight_observer)
    s.qconfig = Q.QConfig(activation=Q.MinMaxObserver.with_args(reduce_range=True),
                          weight=Q.default_per_channel_weight_observer if per_channel else Q.default_weight_observer)
    tp, sp = tq.prepare(t.eval()), Q.prepare(s.eval())
    assert isinstance(sp.module[0].activation_post_process, Q.MinMaxObserver)
    assert not hasattr(s.module[0], "activation_post_process") or "activation_post_process" not in s.module[0]._modules
    rng = np.random.default_rng(1)
    for _ in range(3):
        c = rng.standard_normal((16, 1, 8, 8)).astype(np.float32)
        tp(torch.tensor(c))
        sp(sf.tensor(c))
    tc, sc = tq.convert(tp), Q.convert(sp)
    assert isinstance(sc.module[0], sf.ao.nn.intrinsic.quantized.ConvReLU2d if fused else sf.ao.nn.quantized.Conv2d)
    assert isinstance(sc.module[4], sf.ao.nn.quantized.Linear)
    _compare_quantized_layers(tc, sc, rng.standard_normal((16, 1, 8, 8)).astype(np.float32))


@pytest.mark.parametrize("qconfig,fused", [("fake_quant per tensor", False), ("x86", False),
                                           ("x86", True), ("qnnpack", False)])
def test_qat_forward_backward_and_convert_match_torch(engine, qconfig, fused):
    # qnnpack's qconfig uses the full 0..255 activation range: torch's x86 kernels saturate
    # their int16 pair sums on it (the reason x86 uses reduce_range), so run it on qnnpack
    engine("qnnpack" if qconfig == "qnnpack" else "x86")
    t, s = _pair(seed=3, fused="qat" if fused else False)
    if qconfig == "fake_quant per tensor":  # FakeQuantize (not fused) with per-tensor weights
        t.qconfig = tq.QConfig(activation=tq.default_fake_quant, weight=tq.default_weight_fake_quant)
        s.qconfig = Q.QConfig(activation=Q.default_fake_quant, weight=Q.default_weight_fake_quant)
    else:  # FusedMovingAvgObsFakeQuantize, per channel (x86) or per tensor (qnnpack)
        t.qconfig, s.qconfig = tq.get_default_qat_qconfig(qconfig), Q.get_default_qat_qconfig(qconfig)
    tp, sp = tq.prepare_qat(t.train()), Q.prepare_qat(s.train())
    assert isinstance(sp.module[4], sf.ao.nn.qat.Linear)
    assert isinstance(sp.module[0], sf.ao.nn.intrinsic.qat.ConvReLU2d if fused else sf.ao.nn.qat.Conv2d)
    # prepare_qat copies the model (inplace=False, as torch); from_float hands the float
    # module's Parameters to the QAT module (torch's qat.Linear.from_float does the same)
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(getattr(sp.module[4], name).detach().numpy(),
                                      getattr(s.module[4], name).detach().numpy())
    lin = snn.Linear(4, 3)
    lin.qconfig = s.qconfig
    assert sf.ao.nn.qat.Linear.from_float(lin).weight is lin.weight
    assert [n for n, _ in sp.named_parameters()] == [n for n, _ in tp.named_parameters()]
    rng = np.random.default_rng(2)
    for _ in range(3):  # fake-quant forward and STE backward, step after step
        x = rng.standard_normal((8, 1, 8, 8)).astype(np.float32)
        g = rng.standard_normal((8, 10)).astype(np.float32)
        yt = tp(torch.tensor(x))
        ys = sp(sf.tensor(x))
        np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        tp.zero_grad()
        sp.zero_grad()
        yt.backward(torch.tensor(g))
        ys.backward(sf.tensor(g))
        t_params = dict(tp.named_parameters())
        for n, p in sp.named_parameters():  # names checked equal above
            np.testing.assert_allclose(p.grad.numpy(), t_params[n].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    tc, sc = tq.convert(tp.eval()), Q.convert(sp.eval())
    _compare_quantized_layers(tc, sc, rng.standard_normal((8, 1, 8, 8)).astype(np.float32))


def test_workflow_errors_say_what_to_do():
    _, s = _pair()
    with pytest.raises(ValueError, match="no module has a qconfig"):
        Q.prepare(s)
    s.qconfig = Q.default_qconfig
    with pytest.raises(ValueError, match="call prepare"):
        Q.convert(s)
    with pytest.raises(ValueError, match="training mode"):
        Q.prepare_qat(s.eval())
    with pytest.warns(UserWarning, match="must run observer"):  # converted uncalibrated
        q = Q.convert(Q.prepare(s))
    with pytest.raises(TypeError, match="QuantStub"):
        q.module(sf.ones(1, 1, 8, 8))
    with pytest.raises(ValueError, match="only dtype=qint8"):
        Q.quantize_dynamic(s, dtype=sf.quint8)


def test_fuse_conv_bn_relu_folds_like_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3), torch.nn.BatchNorm2d(5), torch.nn.ReLU())
    t[1].running_mean.uniform_(-1, 1)
    t[1].running_var.uniform_(0.5, 2)
    t[1].weight.data.uniform_(0.5, 1.5)
    s = snn.Sequential(snn.Conv2d(3, 5, 3), snn.BatchNorm2d(5), snn.ReLU())
    s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    tf, sf_ = tq.fuse_modules(t.eval(), [["0", "1", "2"]]), Q.fuse_modules(s.eval(), ["0", "1", "2"])
    assert isinstance(sf_[0], sf.ao.nn.intrinsic.ConvReLU2d)
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(sf_(sf.tensor(x)).numpy(), tf(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sf_(sf.tensor(x)).numpy(), s(sf.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="eval mode"):
        Q.fuse_modules(s.train(), ["0", "1"])
    with pytest.raises(NotImplementedError, match="cannot fuse ReLU, Conv2d"):
        Q.fuse_modules(s, ["2", "0"])


def test_partial_quantization_and_one_call_forms_match_torch(engine):
    engine("x86")
    torch.manual_seed(4)

    def build(lib, Qm):
        nn_ = lib.nn
        m = nn_.Sequential(Qm.QuantStub(), nn_.Linear(6, 8), nn_.ReLU(), Qm.DeQuantStub(), nn_.Linear(8, 3))
        m.qconfig = Qm.default_qconfig
        m[4].qconfig = None  # stays float: after the DeQuantStub
        return m

    t, s = build(torch, tq), build(sf, Q)
    s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(5)
    cal = [rng.standard_normal((16, 6)).astype(np.float32) for _ in range(2)]
    x = rng.standard_normal((5, 6)).astype(np.float32)

    def calibrate(model, lib):
        for c in cal:
            model(lib.tensor(c))

    tq_model = tq.quantize(t.eval(), calibrate, [torch])
    sq_model = Q.quantize(s.eval(), calibrate, [sf])
    assert type(sq_model[4]) is snn.Linear and isinstance(sq_model[1], sf.ao.nn.quantized.Linear)
    assert not any("activation_post_process" in m._modules for m in s.modules())  # input untouched
    np.testing.assert_allclose(sq_model(sf.tensor(x)).numpy(), tq_model(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    # quantize() == prepare + calibrate + convert
    p = Q.prepare(s.eval())
    calibrate(p, sf)
    np.testing.assert_array_equal(Q.convert(p)(sf.tensor(x)).numpy(), sq_model(sf.tensor(x)).numpy())
