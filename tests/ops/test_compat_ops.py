"""The compat-ops pass outside the spec table: in-place dropouts (statistics),
memory-sharing constructors (frombuffer, DLPack, empty_permuted), resize semantics,
as_subclass, and PyTorch's error messages for bad input. Values are compared with torch 2.13."""

import re
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

_TORCH_SCALAR_TYPES = re.compile(r"\b(Float|Double|Long|Int|Half|BFloat16|Bool)\b")


def _raises_like_torch(sf_call, torch_call, exc=RuntimeError):
    """Both raise ``exc`` and shardflow's message contains torch's (up to the first of torch's
    scalar-type names, which shardflow spells as dtypes: ``shardflow.float32`` for ``Float``)."""
    with pytest.raises(Exception) as t:
        torch_call()
    want = _TORCH_SCALAR_TYPES.split(str(t.value).split("\n")[0])[0][:80]
    with pytest.raises(exc, match=re.escape(want)):
        sf_call()


# ---------------------------------------------------------------- dropouts
def test_in_place_dropouts_write_into_the_input():
    sf.manual_seed(2)
    x = sf.ones(4000)
    assert sf.dropout_(x, 0.25, True) is x
    kept = x.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.03 and np.allclose(x.numpy()[kept], 1 / 0.75)
    y = sf.ones(3)
    assert sf.dropout_(y, 0.5, False) is y and np.all(y.numpy() == 1)
    f = sf.ones(50, 40, 3)
    out = sf.feature_dropout(f, 0.5, True)
    assert out is not f and np.all(f.numpy() == 1)
    per_feature = out.numpy()
    assert np.all(per_feature == per_feature[..., :1])  # whole (n, c) features dropped together
    assert 0.4 < (per_feature[..., 0] != 0).mean() < 0.6
    g = sf.ones(50, 40, 3)
    assert sf.feature_dropout_(g, 0.5, True) is g and np.all(g.numpy() == g.numpy()[..., :1])
    h = sf.randn(2000)
    before = h.numpy().copy()
    assert sf.alpha_dropout_(h, 0.2, True) is h and not np.array_equal(h.numpy(), before)
    k = sf.randn(40, 30, 2)
    assert sf.feature_alpha_dropout_(k, 0.3, True) is k
    p, selu_alpha = 0.3, 1.7580993408473766  # a dropped element becomes alpha * a * (p - 1)
    a = 1.0 / np.sqrt((selu_alpha ** 2 * p + 1.0) * (1.0 - p))
    dropped = np.isclose(k.numpy(), selu_alpha * a * (p - 1.0))
    assert np.array_equal(dropped.all(-1), dropped.any(-1)) and 0.2 < dropped.all(-1).mean() < 0.4
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        sf.feature_dropout(sf.ones(3), 0.5, True)


# ---------------------------------------------------------------- memory-sharing constructors
def test_frombuffer_shares_memory_and_checks_like_torch():
    buf = bytearray(np.arange(4, dtype=np.int32).tobytes())
    t, tt = sf.frombuffer(buf, dtype=sf.int32, offset=4), torch.frombuffer(buf, dtype=torch.int32, offset=4)
    assert np.array_equal(t.numpy(), tt.numpy())
    t[0] = 99
    assert np.frombuffer(buf, np.int32)[1] == 99 == tt[0].item()
    for kw in (dict(offset=16), dict(count=5), dict(offset=3)):
        with pytest.raises(ValueError) as te:
            torch.frombuffer(bytearray(16), dtype=torch.int32, **kw)
        with pytest.raises(ValueError, match=re.escape(str(te.value)[:40])):
            sf.frombuffer(bytearray(16), dtype=sf.int32, **kw)
    with pytest.warns(UserWarning, match="not writable"):
        sf.frombuffer(b"\x00\x00\x80\x3f", dtype=sf.float32)


def test_dlpack_exchanges_memory_with_torch_both_ways():
    tt = torch.arange(6.0).reshape(2, 3)
    s = sf.from_dlpack(tt)
    tt[0, 0] = 42.0
    assert s.shape == (2, 3) and s[0, 0].item() == 42.0
    s2 = sf.arange(4.0)
    back = torch.from_dlpack(sf.to_dlpack(s2))
    s2[1] = -5.0
    assert back[1].item() == -5.0
    assert sf.utils.dlpack.from_dlpack(sf.utils.dlpack.to_dlpack(s2))[1].item() == -5.0
    with pytest.raises(TypeError, match="__dlpack__"):
        sf.from_dlpack([1, 2])


def test_empty_permuted_and_new_empty_strided_have_torch_strides_and_shapes():
    for size, layout in [((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,))]:
        s, t = sf.empty_permuted(size, layout), torch.empty_permuted(size, layout)
        assert s.shape == t.shape and s.stride() == t.stride()
    n = sf.zeros(2, dtype=sf.float64).new_empty_strided((2, 3), (3, 1))
    assert n.shape == (2, 3) and n.dtype == sf.float64
    with pytest.raises(RuntimeError, match="permutation"):
        sf.empty_permuted((2, 3), (0, 0))


# ---------------------------------------------------------------- resize
@pytest.mark.parametrize("start, new", [((6,), (2, 2)), ((2, 3), (3, 2)), ((2, 2), (2,))])
def test_resize_keeps_the_leading_elements_like_torch(start, new):
    s = sf.arange(float(np.prod(start))).reshape(start)
    t = torch.arange(float(np.prod(start))).reshape(start)
    assert s.resize_(*new) is s
    t.resize_(*new)
    assert s.shape == t.shape and np.array_equal(s.numpy(), t.numpy())


def test_resize_growth_keeps_old_values_and_refuses_grad_tensors():
    s = sf.arange(3.0)
    s.resize_(2, 3)
    assert s.shape == (2, 3) and np.array_equal(s.numpy().reshape(-1)[:3], [0, 1, 2])
    s.resize_as_(sf.ones(4))
    assert s.shape == (4,) and np.array_equal(s.numpy()[:3], [0, 1, 2])
    assert sf.resize_as_(s, sf.ones(1, 2)).shape == (1, 2)
    _raises_like_torch(lambda: sf.ones(3, requires_grad=True).resize_(5),
                       lambda: torch.ones(3, requires_grad=True).resize_(5))


def test_out_of_place_resize_is_a_deprecated_reshape():
    x = sf.arange(4.0, requires_grad=True)
    with pytest.warns(UserWarning, match="deprecated"):
        y = x.resize(2, 2)
    assert y.shape == (2, 2)
    (y * sf.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert np.array_equal(x.grad.numpy(), [1, 2, 3, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.resize_as(sf.ones(1, 4)).shape == (1, 4)
        with pytest.raises(RuntimeError, match="4 elements"):
            x.resize(3)


# ---------------------------------------------------------------- as_subclass / range
def test_as_subclass_shares_memory_and_keeps_the_graph():
    class MyTensor(sf.Tensor):
        pass

    x = sf.ones(3, requires_grad=True)
    y = (x * 2).as_subclass(MyTensor)
    assert type(y) is MyTensor and y.requires_grad
    (y * sf.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert np.array_equal(x.grad.numpy(), [2, 4, 6])
    base = sf.zeros(2)
    alias = base.as_subclass(sf.nn.Parameter)
    base[0] = 5.0
    assert isinstance(alias, sf.nn.Parameter) and alias[0].item() == 5.0
    with pytest.raises(TypeError, match="subclass of Tensor"):
        base.as_subclass(int)


@pytest.mark.parametrize("args, kw", [((0, 5), {}), ((1, 2, 0.3), {}), ((5, 1, -1.5), {}),
                                      ((0, 5), {"dtype": "int64"})])
def test_range_is_end_inclusive_and_deprecated_like_torch(args, kw):
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        s = sf.range(*args, **{k: getattr(sf, v) for k, v in kw.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)


# ---------------------------------------------------------------- errors that teach (torch's messages)
@pytest.mark.parametrize("call", [
    lambda m: m.cov(m.ones(2, 2, 2)),
    lambda m: m.corrcoef(m.ones(2, 2, 2)),
    lambda m: m.renorm(m.ones(3), 2, 0, 1.0),
    lambda m: m.renorm(m.ones(2, 2), -1, 0, 1.0),
    lambda m: m.renorm(m.ones(2, 2), 2, 0, -1.0),
    lambda m: m.gradient(m.ones(1)),
    lambda m: m.gradient(m.ones(2, 3), edge_order=2),
    lambda m: m.put(m.zeros(3), m.tensor([1, 2]), m.tensor([1.0])),
    lambda m: m.index_reduce(m.ones(3), 0, m.tensor([0, 0]), m.tensor([2.0, 3.0]), "sum"),
    lambda m: m.segment_reduce(m.ones(5), "sum", lengths=m.tensor([2, 0, 2])),
    lambda m: m.segment_reduce(m.ones(5), "foo", lengths=m.tensor([2, 0, 3])),
    lambda m: m.fill(m.zeros(2), m.tensor([1.0, 2.0])),
    lambda m: m.put(m.zeros(2), m.tensor([0]), m.tensor([1.0], dtype=m.float64)),
    lambda m: m.index_reduce(m.ones(3, 2), 0, m.tensor([0, 1]), m.ones(2, 2, dtype=m.float64), "prod"),
    lambda m: m.index_reduce(m.ones(3, 2), 0, m.tensor([0.0, 1.0]), m.ones(2, 2), "prod"),
])
def test_bad_input_raises_torch_runtime_error(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises_like_torch(lambda: call(sf), lambda: call(torch))


def test_put_out_of_range_index_names_it_like_torch():
    _raises_like_torch(lambda: sf.put(sf.zeros(2, 2), sf.tensor([5]), sf.tensor([1.0])),
                       lambda: torch.put(torch.zeros(2, 2), torch.tensor([5]), torch.tensor([1.0])), IndexError)


def test_mode_and_nanmedian_indices_follow_torch_on_ties_and_nan():
    cases = [[2.0, 1.0, 2.0, 1.0, 3.0], [5.0, 5.0, 4.0, 4.0, 4.0], [7.0, 7.0, 7.0]]
    for row in cases:
        s, t = sf.mode(sf.tensor(row)), torch.mode(torch.tensor(row))
        assert s.values.item() == t.values.item() and s.indices.item() == t.indices.item()
    nan = float("nan")
    data = [[1.0, nan, 2.0, 3.0], [nan, 4.0, nan, -1.0], [nan, nan, 5.0, nan]]
    s, t = sf.nanmedian(sf.tensor(data), 1), torch.nanmedian(torch.tensor(data), 1)
    assert np.array_equal(s.values.numpy(), t.values.numpy()) and np.array_equal(s.indices.numpy(), t.indices.numpy())
    assert sf.nanmedian(sf.tensor(data)).item() == torch.nanmedian(torch.tensor(data)).item()
    assert np.isnan(sf.nanmedian(sf.tensor([nan, nan])).item())


def test_histogramdd_edges_and_counts_match_torch():
    pts = np.random.default_rng(0).standard_normal((50, 3)).astype(np.float32)
    s = sf.histogramdd(sf.tensor(pts), bins=[2, 3, 4])
    t = torch.histogramdd(torch.tensor(pts), bins=[2, 3, 4])
    assert np.array_equal(s.hist.numpy(), t.hist.numpy())
    for se, te in zip(s.bin_edges, t.bin_edges):
        np.testing.assert_allclose(se.numpy(), te.numpy(), rtol=1e-6)


def test_top_level_method_forms():
    x = sf.ones(2)
    assert sf.get_device(x) == -1 == torch.get_device(torch.ones(2))
    assert sf.is_inference(x) is False
    y = sf.zeros(2)
    assert sf.addmv_(y, sf.eye(2), sf.tensor([1.0, 2.0])) is y and np.array_equal(y.numpy(), [1, 2])
    z = sf.tensor([1.0, 2.0])
    assert sf.ldexp_(z, sf.tensor([1, 2])) is z and np.array_equal(z.numpy(), [2, 8])


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, 3, 4),
    lambda m: m.ones(2, 3, 4).permute(2, 0, 1),
    lambda m: m.ones(2, 1, 4),
    lambda m: m.ones(()),
    lambda m: m.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1)),
    lambda m: m.ones(4, 6)[:, ::2].t(),
])
def test_dim_order_matches_torch(make):
    assert make(sf).dim_order() == make(torch).dim_order()


def test_training_steps_with_renorm_and_a_correlation_loss_match_torch():
    """A max-norm constraint (``weight.data.renorm_``) and a decorrelation loss built from
    ``cov`` / ``corrcoef`` / ``nanmedian`` over several SGD steps, from torch's weights."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    t_lin = torch.nn.Linear(5, 4)
    s_lin = sf.nn.Linear(5, 4)
    s_lin.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t_lin.state_dict().items()})
    t_opt = torch.optim.SGD(t_lin.parameters(), lr=0.1)
    s_opt = sf.optim.SGD(s_lin.parameters(), lr=0.1)
    for _ in range(4):
        for m, lin, opt in ((torch, t_lin, t_opt), (sf, s_lin, s_opt)):
            h = lin(m.tensor(x))  # (16, 4)
            off_diag = m.corrcoef(h.t()) - m.eye(4)
            loss = (off_diag ** 2).sum() + m.cov(h.t()).diagonal().sum() * 0.1 + m.nanmedian(h) ** 2
            opt.zero_grad()
            loss.backward()
            opt.step()
            lin.weight.data.renorm_(2, 0, 0.5)
        np.testing.assert_allclose(s_lin.weight.detach().numpy(), t_lin.weight.detach().numpy(), atol=1e-5)
        np.testing.assert_allclose(s_lin.bias.detach().numpy(), t_lin.bias.detach().numpy(), atol=1e-5)
    norms = np.linalg.norm(s_lin.weight.detach().numpy(), axis=1)
    assert np.all(norms <= 0.5 + 1e-5)
    state = s_lin.state_dict()
    restored = sf.nn.Linear(5, 4)
    restored.load_state_dict(state)
    assert np.array_equal(restored.weight.detach().numpy(), s_lin.weight.detach().numpy())


def test_module_load_and_reinforce_like_torch():
    for assign in (False, True):
        s_dest, t_dest = sf.zeros(3), torch.zeros(3)
        s_out = s_dest.module_load(sf.tensor([1.0, 2.0, 3.0], requires_grad=True), assign=assign)
        t_out = t_dest.module_load(torch.tensor([1.0, 2.0, 3.0], requires_grad=True), assign=assign)
        assert np.array_equal(s_out.numpy(), t_out.numpy()) and not s_out.requires_grad
        assert np.array_equal(s_dest.detach().numpy(), t_dest.detach().numpy())  # copied into dest unless assign
    with pytest.raises(RuntimeError) as t:
        torch.ones(2).reinforce(1)
    with pytest.raises(RuntimeError) as s:
        sf.ones(2).reinforce(1)
    assert str(s.value) == str(t.value)


def test_map2_and_is_distributed_like_torch():
    s, t = sf.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    fn = lambda a, b, c: a * b + c  # noqa: E731
    assert s.map2_(sf.tensor([2.0, 2.0, 2.0]), sf.tensor([1.0]), fn) is s
    t.map2_(torch.tensor([2.0, 2.0, 2.0]), torch.tensor([1.0, 1.0, 1.0]), fn)
    assert np.array_equal(s.numpy(), t.numpy())
    assert sf.is_distributed(s) is False is torch.is_distributed(t)
