"""Session 32's Tensor methods and their top-level forms against torch 2.13: device methods
torch's CPU build refuses (``xpu``/``ipu``/``mtia``), ``record_stream``, ``chalf``,
``conj_physical_``, ``hash_tensor``, the quantized accessors on float and quantized tensors
(``int_repr``, ``q_scale`` ..., ``dequantize``, ``quantize_per_tensor_dynamic``, qschemes),
the sparse surface of dense tensors and ``sparse_mask``, and ``Tensor.index``."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


def test_device_methods_refuse_like_torch():
    xs, xt = sf.ones(2), torch.ones(2)
    for name, exc, text in [("xpu", AssertionError, "Torch not compiled with XPU enabled"),
                            ("mtia", AssertionError, "Torch not compiled with MTIA enabled"),
                            ("ipu", RuntimeError, "PyTorch is not linked with support for ipu devices")]:
        with pytest.raises(exc, match=text):
            getattr(xt, name)()
        with pytest.raises(exc, match=text + ".*expected 'cpu' or 'cuda'"):
            getattr(xs, name)()


def test_record_stream():
    with pytest.raises(RuntimeError, match="unknown parameter type"):
        torch.ones(2).record_stream(None)
    with pytest.raises(RuntimeError, match="unknown parameter type.*expected a Stream, got NoneType"):
        sf.ones(2).record_stream(None)
    assert sf.ones(2).record_stream(sf.Stream()) is None


def test_chalf_refuses_and_conj_physical_in_place():
    with pytest.raises(NotImplementedError, match="no storage for dtype complex32.*use complex64"):
        sf.ones(2).chalf()
    z = np.array([1 + 2j, -3 - 0.5j], dtype=np.complex64)
    zs, zt = sf.tensor(z), torch.tensor(z)
    assert zs.conj_physical_() is zs and zt.conj_physical_() is zt
    np.testing.assert_array_equal(zs.numpy(), zt.numpy())
    assert sf.conj_physical_(zs) is zs
    np.testing.assert_array_equal(zs.numpy(), z)
    real = sf.tensor([1.0, -2.0])
    assert real.conj_physical_() is real and real.tolist() == [1.0, -2.0]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.conj_physical_(torch.ones(2, dtype=torch.complex64, requires_grad=True))
    with pytest.raises(RuntimeError, match="leaf"):
        sf.conj_physical_(sf.ones(2, dtype=sf.complex64, requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "uint8", "int64", "bool"])
def test_hash_tensor_matches_torch(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 4)) * 50).astype(np.float64)
    xt = torch.tensor(a).to(getattr(torch, dtype))
    xs = sf.tensor(xt.float().numpy() if dtype != "float64" else xt.numpy()).to(getattr(sf, dtype))
    assert xs.tolist() == xt.tolist()
    for args, kw in [((), {}), ((1,), {}), ((0,), {"keepdim": True}), (([0, 1],), {})]:
        s, t = sf.hash_tensor(xs, *args, **kw), torch.hash_tensor(xt, *args, **kw)
        assert s.dtype == sf.uint64 and list(s.shape) == list(t.shape)
        assert s.tolist() == t.tolist(), (args, kw)
    assert xs.hash_tensor().tolist() == xt.hash_tensor().tolist()


def test_hash_tensor_errors():
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.hash_tensor(torch.ones(0))
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        sf.hash_tensor(sf.ones(0))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.hash_tensor(torch.ones(0, 3), 0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        sf.hash_tensor(sf.ones(0, 3), 0)
    with pytest.raises(ValueError, match="expected mode 0"):
        sf.hash_tensor(sf.ones(2), mode=1)


@pytest.mark.parametrize("name", ["int_repr", "q_scale", "q_zero_point", "q_per_channel_scales",
                                  "q_per_channel_zero_points", "q_per_channel_axis"])
def test_quantized_accessors_refuse_float_tensors_like_torch(name):
    with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}'"):
        getattr(torch.ones(2), name)()
    with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}'.*quantize_per_tensor"):
        getattr(sf.ones(2), name)()
    with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}'"):
        getattr(sf, name)(sf.ones(2))
    with pytest.raises(NotImplementedError, match="aten::qscheme"):
        sf.ones(2).qscheme()


def test_quantized_top_level_functions_match_torch():
    x = np.array([-1.0, 0.3, 2.5, 0.0, 1.1], dtype=np.float32)
    xs, xt = sf.tensor(x), torch.tensor(x)
    assert xs.dequantize() is xs and xt.dequantize() is xt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of quantized tensors
        for sdt, tdt in [(sf.quint8, torch.quint8), (sf.qint8, torch.qint8)]:
            for rr in (False, True):
                qs = sf.quantize_per_tensor_dynamic(xs, sdt, rr)
                qt = torch.quantize_per_tensor_dynamic(xt, tdt, rr)
                assert sf.int_repr(qs).tolist() == torch.int_repr(qt).tolist()
                assert sf.q_zero_point(qs) == torch.q_zero_point(qt)
                # shardflow keeps scales float32-rounded (its observers' rule); torch a double
                assert sf.q_scale(qs) == pytest.approx(torch.q_scale(qt), rel=1e-7)
        with pytest.raises(RuntimeError, match="QInt32.*not supported"):
            torch.quantize_per_tensor_dynamic(xt, torch.qint32, False)
        qc = torch.quantize_per_channel(torch.ones(2, 3), torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 0,
                                        torch.quint8)
    with pytest.raises(RuntimeError, match="qint32 not supported.*quint8 or qint8"):
        sf.quantize_per_tensor_dynamic(xs, sf.qint32, False)
    qcs = sf.quantize_per_channel(sf.ones(2, 3), sf.tensor([0.1, 0.2]), sf.tensor([0, 1]), 0, sf.quint8)
    assert sf.q_per_channel_axis(qcs) == torch.q_per_channel_axis(qc) == 0
    np.testing.assert_allclose(sf.q_per_channel_scales(qcs).numpy(), torch.q_per_channel_scales(qc).numpy(),
                               rtol=1e-7)
    assert sf.q_per_channel_zero_points(qcs).tolist() == torch.q_per_channel_zero_points(qc).tolist()
    assert qcs.qscheme() is sf.per_channel_affine and qc.qscheme() is torch.per_channel_affine
    for name in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
                 "per_channel_affine_float_qparams"):
        assert isinstance(getattr(sf, name), sf.qscheme) and isinstance(getattr(torch, name), torch.qscheme)
        assert repr(getattr(sf, name)) == repr(getattr(torch, name)).replace("torch.", "shardflow.")


def test_sparse_surface_of_dense_tensors_like_torch():
    xs, xt = sf.ones(2, 3), torch.ones(2, 3)
    assert (xs.sparse_dim(), xs.dense_dim()) == (xt.sparse_dim(), xt.dense_dim()) == (0, 2)
    for name in ("indices", "values", "coalesce", "is_coalesced"):
        text = f"{name} expected sparse {'tensor' if name == 'values' else 'coordinate tensor'} layout but got Strided"
        with pytest.raises(RuntimeError, match=text):
            getattr(xt, name)()
        with pytest.raises(RuntimeError, match=text):
            getattr(xs, name)()
    for name in ("_indices", "_values", "_nnz"):
        with pytest.raises(NotImplementedError, match=f"aten::{name}"):
            getattr(xt, name)()
        with pytest.raises(NotImplementedError, match=f"aten::{name}"):
            getattr(xs, name)()
    m = sf.tensor([[1.0, 0, 2], [0, 3, 0]]).to_sparse()
    assert (m.sparse_dim(), m.dense_dim()) == (2, 0) and m.indices().shape == (2, 3)  # the sparse tensor's own


def test_sparse_mask_matches_torch():
    d = np.arange(12, dtype=np.float32).reshape(3, 4) / 3
    mask = np.array([[1, 0, 0, 2], [0, 0, 3, 0], [1, 0, 0, 0]], dtype=np.float32)
    xs, xt = sf.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    ss = xs.sparse_mask(sf.tensor(mask).to_sparse())
    st = xt.sparse_mask(torch.tensor(mask).to_sparse())
    assert ss.is_sparse and ss.indices().tolist() == st.indices().tolist()
    np.testing.assert_allclose(ss.values().detach().numpy(), st.values().detach().numpy())
    (ss.values() * sf.tensor([1.0, 2, 3, 4])).sum().backward()
    (st.values() * torch.tensor([1.0, 2, 3, 4])).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy())
    with pytest.raises(RuntimeError, match="expected a sparse COO mask.*to_sparse"):
        xs.sparse_mask(sf.ones(3, 4))
    with pytest.raises(RuntimeError, match="same shape"):
        xs.sparse_mask(sf.ones(2, 2).to_sparse())


def test_tensor_index_first_class_dims_refused():
    with pytest.raises(TypeError, match="dims"):
        torch.ones(2).index(0)
    with pytest.raises(NotImplementedError, match="first-class dimensions.*tensor\\[...\\]"):
        sf.ones(2).index(0, None)


@pytest.mark.parametrize("per_row, symmetric, qmin, qmax", [(False, False, 0, 255), (True, True, -128, 127)])
def test_fused_moving_avg_obs_fake_quant_matches_torch(per_row, symmetric, qmin, qmax):
    rng = np.random.default_rng(3)
    rows = 4 if per_row else 1
    state_s = [sf.full((rows,), float("inf")), sf.full((rows,), float("-inf")), sf.ones(rows),
               sf.zeros(rows, dtype=sf.int32)]
    state_t = [torch.full((rows,), float("inf")), torch.full((rows,), float("-inf")), torch.ones(rows),
               torch.zeros(rows, dtype=torch.int32)]
    for step in range(2):
        x = (rng.standard_normal((4, 3)) * (step + 1)).astype(np.float32)
        xs, xt = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ys = sf.fused_moving_avg_obs_fake_quant(xs, sf.tensor([1]), sf.tensor([1]), *state_s, 0.1, qmin, qmax, 0,
                                                per_row, symmetric)
        yt = torch.fused_moving_avg_obs_fake_quant(xt, torch.tensor([1]), torch.tensor([1]), *state_t, 0.1, qmin,
                                                   qmax, 0, per_row, symmetric)
        for s, t in zip(state_s, state_t):
            np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)
        np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xt.grad.numpy())
    # observer and fake quant off: the input back, the state untouched
    before = [s.numpy().copy() for s in state_s]
    out = sf.fused_moving_avg_obs_fake_quant(xs, sf.tensor([0]), sf.tensor([0]), *state_s, 0.1, qmin, qmax, 0,
                                             per_row, symmetric)
    assert out is xs and all(np.array_equal(b, s.numpy()) for b, s in zip(before, state_s))


def test_slice_inverse_views_the_slice_with_its_base_geometry():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    bs, bt = sf.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    base_s, base_t = bs * 1, bt * 1
    sl_s, sl_t = base_s[:, 1:3], base_t[:, 1:3]
    rs, rt = sf.slice_inverse(sl_s, base_s, 1, 1, 3, 1), torch.slice_inverse(sl_t, base_t, 1, 1, 3, 1)
    assert rs.tolist() == rt.tolist() and rs.shape == rt.shape
    assert sl_s.slice_inverse(base_s, 1, 1, 3).tolist() == sl_t.slice_inverse(base_t, 1, 1, 3).tolist()
    (rs * sf.tensor(a)).sum().backward()
    (rt * torch.tensor(a)).sum().backward()
    np.testing.assert_array_equal(bs.grad.numpy(), bt.grad.numpy())
