"""Observers, qparams and fake quantization against torch.ao.quantization (bit for bit)."""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.ao.quantization as Q

tq = torch.ao.quantization
# torch's own notices (reduce_range and quantized tensor creation are deprecated there)
pytestmark = [pytest.mark.filterwarnings("ignore:.*reduce_range will be deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:.*are deprecated:UserWarning")]

CASES = [
    ("MinMaxObserver", {}),
    ("MinMaxObserver", dict(quant_min=0, quant_max=127)),
    ("MinMaxObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric")),
    ("MinMaxObserver", dict(dtype="quint8", qscheme="per_tensor_symmetric")),
    ("MinMaxObserver", dict(reduce_range=True)),
    ("MovingAverageMinMaxObserver", {}),
    ("MovingAverageMinMaxObserver", dict(averaging_constant=0.2, dtype="qint8")),
    ("PerChannelMinMaxObserver", dict(dtype="qint8", qscheme="per_channel_symmetric")),
    ("PerChannelMinMaxObserver", dict(ch_axis=1)),
    ("MovingAveragePerChannelMinMaxObserver", dict(averaging_constant=0.3)),
]


def _torch_kwargs(kw):
    return {k: (getattr(torch, v) if k in ("dtype", "qscheme") else v) for k, v in kw.items()}


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_observer_qparams_and_state_match_torch(name, kw):
    rng = np.random.default_rng(0)
    ours, ref = getattr(Q, name)(**kw), getattr(tq, name)(**_torch_kwargs(kw))
    for step, (scale, shift) in enumerate(((1, 0.3), (2, -1), (0.5, 2))):
        x = (rng.standard_normal((4, 8)) * scale + shift).astype(np.float32)
        t = sf.tensor(x)
        assert ours(t) is t  # an observer passes its input through, as torch's
        ref(torch.tensor(x))
        # after every batch: the running (or averaged) min / max and the qparams they give
        for attr in ("min_val", "max_val"):
            np.testing.assert_array_equal(getattr(ours, attr).numpy(), getattr(ref, attr).numpy(),
                                          err_msg=f"{attr} after batch {step}")
        s, z = ours.calculate_qparams()
        rs, rz = ref.calculate_qparams()
        np.testing.assert_array_equal(s.numpy(), rs.numpy(), err_msg=f"scale after batch {step}")
        np.testing.assert_array_equal(z.numpy(), rz.numpy(), err_msg=f"zero_point after batch {step}")
        assert s.dtype == sf.float32 and z.dtype == sf.int64, (s.dtype, z.dtype)  # torch's dtypes
    ours_sd, ref_sd = ours.state_dict(), ref.state_dict()
    assert list(ours_sd) == list(ref_sd)
    for k in ref_sd:
        np.testing.assert_array_equal(ours_sd[k].numpy(), ref_sd[k].numpy(), err_msg=k)


@pytest.mark.parametrize("kw", [{}, dict(reduce_range=True), dict(dtype="qint8", qscheme="per_tensor_symmetric")])
@pytest.mark.parametrize("skewed", [False, True])
def test_histogram_observer_qparams_match_torch(kw, skewed):
    rng = np.random.default_rng(4)
    ours, ref = Q.HistogramObserver(**kw), tq.HistogramObserver(**_torch_kwargs(kw))
    for i in range(4):  # widening ranges: the old histogram is re-binned each time
        x = (rng.standard_normal((64, 50)) * (1 + i) + rng.standard_normal()).astype(np.float32)
        if skewed:
            x = np.maximum(x, 0) ** 2  # a long tail for the clipping search to cut
        ours(sf.tensor(x))
        ref(torch.tensor(x))
    assert float(ours.min_val.numpy()) == ref.min_val.item()
    assert float(ours.max_val.numpy()) == ref.max_val.item()
    # torch's vectorised linspace rounds a few re-binning mid-points differently (it depends
    # on the SIMD width and thread split): a little mass can sit one bin over, so the
    # cumulative histograms agree within a fraction of one bin's mass; the qparams are equal
    h, rh = ours.histogram.numpy(), ref.histogram.numpy()
    assert h.sum() == rh.sum()
    assert np.abs(np.cumsum(h) - np.cumsum(rh)).max() <= 0.1 * rh.max()
    s, z = ours.calculate_qparams()
    rs, rz = ref.calculate_qparams()
    np.testing.assert_array_equal(s.numpy(), rs.numpy())
    np.testing.assert_array_equal(z.numpy(), rz.numpy())
    if skewed:  # the search clipped the tail: a range smaller than MinMax's
        mm = Q.MinMaxObserver(**kw)
        mm(sf.tensor(np.array([float(ours.min_val.numpy()), float(ours.max_val.numpy())], np.float32)))
        assert s.numpy()[0] < mm.calculate_qparams()[0].numpy()[0]


def test_unobserved_observer_warns_and_gives_defaults():
    for name in ("MinMaxObserver", "PerChannelMinMaxObserver"):
        with pytest.warns(UserWarning, match="must run observer"):
            s, z = getattr(Q, name)().calculate_qparams()
        with pytest.warns(UserWarning, match="must run observer"):
            rs, rz = getattr(tq, name)().calculate_qparams()
        np.testing.assert_array_equal(s.numpy(), rs.numpy())
        np.testing.assert_array_equal(z.numpy(), rz.numpy())
        assert s.dtype == sf.float32 and z.dtype == sf.int64, (name, s.dtype, z.dtype)


def test_observer_errors_name_the_fix():
    with pytest.raises(NotImplementedError, match="PerChannelMinMaxObserver"):
        Q.MinMaxObserver(qscheme="per_channel_affine")
    with pytest.raises(ValueError, match="quant_min < quant_max"):
        Q.MinMaxObserver(quant_min=0, quant_max=300)
    obs = Q.PerChannelMinMaxObserver()
    obs(sf.ones(3, 2))
    with pytest.raises(RuntimeError, match="has 4 channels but the observer has seen 3"):
        obs(sf.ones(4, 2))
    with pytest.raises(ValueError, match="observer class"):
        Q.QConfig(activation=Q.MinMaxObserver(), weight=Q.default_weight_observer)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fake_quantize_functions_forward_and_ste_backward_match_torch(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 5)) * 3).astype(dtype)
    g = rng.standard_normal((6, 5)).astype(dtype)
    s = np.array([0.1, 0.02, 0.05, 0.3, 0.07], np.float32)
    z = np.array([0, 3, -2, 1, 0], np.int32)
    cases = [
        (lambda lib, t: lib.fake_quantize_per_tensor_affine(t, 0.05, 10, 0, 127),
         lambda t: torch.fake_quantize_per_tensor_affine(t, 0.05, 10, 0, 127)),
        (lambda lib, t: lib.fake_quantize_per_channel_affine(t, s, z, 1, -8, 7),
         lambda t: torch.fake_quantize_per_channel_affine(t, torch.tensor(s), torch.tensor(z), 1, -8, 7)),
    ]
    for ours_fn, ref_fn in cases:
        xa, xt = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, yt = ours_fn(Q, xa), ref_fn(xt)
        y.backward(sf.tensor(g))
        yt.backward(torch.tensor(g))
        np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
        np.testing.assert_array_equal(xa.grad.numpy(), xt.grad.numpy())
        clipped = xt.grad.numpy() == 0
        assert 0 < clipped.sum() < clipped.size  # the mask both passes and blocks gradients here


FAKE_QUANTS = ["default_fake_quant", "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
               "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
               "default_fused_per_channel_wt_fake_quant"]


@pytest.mark.parametrize("which", FAKE_QUANTS)
def test_fake_quantize_module_matches_torch_over_several_batches(which):
    rng = np.random.default_rng(2)
    ours, ref = getattr(Q, which)(), getattr(tq.fake_quantize, which)()
    for i in range(3):
        shape = (6, 3, 3, 3) if "channel" in which else (4, 6)  # per channel: a conv weight
        x = (rng.standard_normal(shape) * (i + 1) + 0.2).astype(np.float32)
        xa, xt = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, yt = ours(xa), ref(xt)
        np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
        y.sum().backward()
        yt.sum().backward()
        np.testing.assert_array_equal(xa.grad.numpy(), xt.grad.numpy())
    ours_sd, ref_sd = ours.state_dict(), ref.state_dict()
    assert list(ours_sd) == list(ref_sd)
    for k in ref_sd:
        np.testing.assert_array_equal(ours_sd[k].numpy().ravel(), ref_sd[k].numpy().ravel(), err_msg=k)
    s, z = ours.calculate_qparams()  # what convert uses: the observer's formula, as in torch
    rs, rz = ref.calculate_qparams()
    np.testing.assert_array_equal(s.numpy(), rs.numpy())
    np.testing.assert_array_equal(z.numpy(), rz.numpy())
    ours.apply(Q.disable_fake_quant)
    x = sf.tensor(rng.standard_normal(shape).astype(np.float32))
    np.testing.assert_array_equal(ours(x).numpy(), x.numpy())


def test_quantize_per_tensor_and_channel_match_torch():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 7)) * 2).astype(np.float32)
    for dtype in ("quint8", "qint8", "qint32"):
        zp = 3 if dtype != "quint8" else 120
        q = sf.quantize_per_tensor(sf.tensor(x), 0.013, zp, getattr(sf, dtype))
        r = torch.quantize_per_tensor(torch.tensor(x), 0.013, zp, getattr(torch, dtype))
        np.testing.assert_array_equal(q.int_repr().numpy(), r.int_repr().numpy())
        np.testing.assert_array_equal(q.dequantize().numpy(), r.dequantize().numpy())
        assert (q.q_scale(), q.q_zero_point()) == (r.q_scale(), r.q_zero_point())
    s = rng.uniform(0.01, 0.1, 7).astype(np.float32)
    z = rng.integers(-5, 5, 7)
    q = sf.quantize_per_channel(sf.tensor(x), sf.tensor(s), sf.tensor(z), 1, sf.qint8)
    r = torch.quantize_per_channel(torch.tensor(x), torch.tensor(s), torch.tensor(z), 1, torch.qint8)
    np.testing.assert_array_equal(q.int_repr().numpy(), r.int_repr().numpy())
    np.testing.assert_allclose(q.dequantize().numpy(), r.dequantize().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="per channel"):
        q.q_scale()


def test_quantized_tensor_shape_ops_and_relu_match_torch():
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    q = sf.quantize_per_tensor(sf.tensor(x), 0.02, 100, sf.quint8)
    r = torch.quantize_per_tensor(torch.tensor(x), 0.02, 100, torch.quint8)
    for ours, ref in ((q.flatten(1), r.flatten(1)), (q.reshape(6, 4), r.reshape(6, 4)),
                      (q.view(-1), r.view(-1)), (q.relu(), torch.relu(r))):
        assert tuple(ours.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(ours.int_repr().numpy(), ref.int_repr().numpy())
        assert (ours.q_scale(), ours.q_zero_point()) == (ref.q_scale(), ref.q_zero_point())


@pytest.mark.parametrize("name", ["MinMaxObserver", "PerChannelMinMaxObserver"])
def test_unobserved_qparams_warn_at_the_caller_like_torch(name):
    """Before any observation: PyTorch's warning (reported at the caller's line) and its
    default qparams (scale 1, zero point 0)."""
    ours, ref = getattr(Q, name)(), getattr(tq, name)()
    with pytest.warns(UserWarning, match="must run observer") as rec:
        s, z = ours.calculate_qparams()
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="must run observer"):
        rs, rz = ref.calculate_qparams()
    np.testing.assert_array_equal(s.numpy(), rs.numpy())
    np.testing.assert_array_equal(z.numpy(), rz.numpy())
