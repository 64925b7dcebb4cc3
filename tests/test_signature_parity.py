"""Keyword-argument parity with torch 2.13 (``scripts/signature_gaps.py``, docs/COMPAT.md
"Keyword arguments").

The audit compares parameter names; a core list of the names programs use most (top-level
functions, Tensor methods, ``nn.functional``, nn layers, optimizers, schedulers) and the names
fixed in the keyword pass must have no gap left, so a regression fails here. The behaviour of
each fixed keyword is then checked against torch: values, and the same exception type where
either refuses.
"""

from __future__ import annotations

import importlib.util
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn.functional as sF

_SPEC = importlib.util.spec_from_file_location(
    "signature_gaps", Path(__file__).resolve().parents[1] / "scripts" / "signature_gaps.py")
gaps = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gaps)

_TOP = """abs add addmm all allclose amax amin any arange argmax argmin argsort bmm broadcast_to cat
chunk clamp clone concat concatenate cos cumsum diag dot einsum empty empty_like eq exp eye flatten
flip from_numpy full full_like gather ge gt isnan linspace log log_softmax logspace logsumexp lt
masked_fill matmul max maximum mean min minimum mm mul multinomial ne norm normal numel ones
ones_like outer permute pow prod promote_types rand rand_like randint randint_like randn randn_like
randperm relu reshape round rsqrt scatter sigmoid sign sin softmax sort split sqrt square squeeze
stack std sub sum swapaxes t tanh tensor tensor_split tile topk transpose tril triu unique
unsqueeze var where zeros zeros_like""".split()
_TENSOR = """abs add add_ addcdiv_ addcmul_ all any argmax backward bfloat16 bool byte char clamp clone
contiguous copy_ cpu cuda cumsum detach div double eq exp expand fill_ flatten flip float gather
half index_select int item long masked_fill max mean min mul mul_ ne new_empty new_full new_ones
new_tensor new_zeros norm numpy permute pow repeat requires_grad_ reshape scatter_ short sigmoid
size softmax sort split sqrt squeeze std sub sum swapaxes t tile to tolist topk transpose type_as
unsqueeze var view view_as zero_""".split()
_F = """adaptive_avg_pool2d avg_pool2d batch_norm binary_cross_entropy
binary_cross_entropy_with_logits conv1d conv2d cross_entropy dropout elu embedding gelu
group_norm hardtanh interpolate l1_loss layer_norm leaky_relu linear log_softmax max_pool2d
mse_loss nll_loss normalize one_hot pad relu scaled_dot_product_attention silu smooth_l1_loss
softmax softplus tanh""".split()
_NN = """BatchNorm1d BatchNorm2d Conv1d Conv2d ConvTranspose2d Dropout Embedding GELU GRU GroupNorm
Hardtanh LSTM LayerNorm LazyBatchNorm1d LazyLinear Linear MaxPool2d MultiheadAttention ReLU
Sequential SyncBatchNorm TransformerEncoderLayer""".split()
_OPTIM = ["optim.SGD", "optim.Adam", "optim.AdamW", "optim.RMSprop", "optim.Adagrad",
          "lr_scheduler.StepLR", "lr_scheduler.CosineAnnealingLR", "lr_scheduler.LambdaLR",
          "lr_scheduler.OneCycleLR", "lr_scheduler.ReduceLROnPlateau"]
CORE = ({f"torch.{n}" for n in _TOP} | {f"Tensor.{n}" for n in _TENSOR} | {f"F.{n}" for n in _F}
        | {f"nn.{n}" for n in _NN} | set(_OPTIM) | {"torch.linalg.norm", "torch.fft.fft"})


@pytest.fixture(scope="module")
def records():
    return gaps.gaps_for(CORE)


def test_core_names_are_all_compared(records):
    # a name the audit cannot read would pass silently: every core name must be compared
    assert CORE - set(records) == set()


def test_core_names_have_no_keyword_gap(records):
    left = {q: r["missing"] + r["via_kwargs"] for q, r in records.items() if r["missing"] or r["via_kwargs"]}
    assert left == {}, f"keywords torch takes that shardflow lacks: {left}"


def test_whole_families_have_no_keyword_gap():
    # every nn.functional function and every nn / optim / lr_scheduler class torch and
    # shardflow both have (about 320 names): none lacks a keyword
    recs = gaps.gaps_for()
    fam = {q: r for q, r in recs.items() if q.split(".")[0] in ("F", "nn", "optim", "lr_scheduler")}
    assert len(fam) > 250
    left = {q: r["missing"] + r["via_kwargs"] for q, r in fam.items() if r["missing"] or r["via_kwargs"]}
    assert left == {}, f"keywords torch takes that shardflow lacks: {left}"


def test_whole_audit_has_only_known_gaps():
    # every name of the audit (about 1,480): a gap not in KNOWN_LEFT (the documented ones) fails
    left = {}
    for q, r in gaps.gaps_for().items():
        extra = set(r["missing"] + r["via_kwargs"]) - gaps.KNOWN_LEFT.get(q, set())
        if extra:
            left[q] = sorted(extra)
    assert left == {}, f"keywords torch takes that shardflow lacks: {left}"


def test_audit_sees_a_gap():
    # the comparison itself: a shardflow function lacking a keyword is reported
    def sum_without_dtype(input, dim=None, keepdim=False):
        return input

    rec = gaps.compare(torch.sum, sum_without_dtype, "sum")
    assert rec["missing"] == ["dtype"]
    assert gaps.doc_params("add(input, other, *, alpha=1, out=None) -> Tensor", "add") == [
        ["input", "other", "alpha", "out"]]


# ---------------------------------------------------------------------------- factories
@pytest.mark.parametrize("call", [
    "zeros(2, 3, layout={m}.strided, pin_memory=False)", "ones(2, layout={m}.strided)",
    "full((2,), 3.0, layout={m}.strided, pin_memory=False)", "arange(4, layout={m}.strided)",
    "linspace(0, 1, 5, layout={m}.strided)", "logspace(0, 1, 3, layout={m}.strided)",
    "eye(3, layout={m}.strided)", "tensor([1, 2], pin_memory=False)",
    "hann_window(4, layout={m}.strided, pin_memory=False)",
    "empty(2, 3, memory_format={m}.contiguous_format).shape",
    "zeros_like({m}.ones(2, 3), layout={m}.strided, memory_format={m}.preserve_format)",
    "full_like({m}.ones(2), 7, memory_format={m}.preserve_format)",
])
def test_factory_keywords_match_torch(call):
    got, want = eval("sf." + call.format(m="sf")), eval("torch." + call.format(m="torch"))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("call, exc", [
    ("zeros(2, layout=3)", TypeError),
    ("empty(2, pin_memory=True)", RuntimeError),
    ("randn(2, pin_memory=True)", RuntimeError),
    ("empty(2, memory_format={m}.preserve_format)", RuntimeError),
    ("zeros_like({m}.ones(2), memory_format=3)", TypeError),
])
def test_factory_keywords_refused_as_torch(call, exc):
    with pytest.raises(exc):
        eval("torch." + call.format(m="torch"))
    with pytest.raises(exc):
        eval("sf." + call.format(m="sf"))


def test_sparse_layout_is_refused_with_the_fix():
    with pytest.raises(NotImplementedError, match="to_sparse"):
        sf.zeros(2, layout=sf.sparse_coo)


def test_random_like_makers_take_device_and_requires_grad():
    x = sf.ones(2, 3, dtype=sf.float64)
    for f in (sf.rand_like, sf.randn_like):
        y = f(x, device="cpu", requires_grad=True, memory_format=sf.preserve_format)
        assert y.requires_grad and y.dtype is sf.float64 and tuple(y.shape) == (2, 3)
    y = sf.randint_like(x, 5, requires_grad=False, device="cpu")
    assert not y.requires_grad and float(y.max()) < 5
    assert sf.randperm(4, requires_grad=False, layout=sf.strided).shape == (4,)


def test_new_factories_keep_device_and_take_size():
    for m in (sf, torch):
        x = m.ones(2, dtype=m.float64)
        assert tuple(x.new_zeros(size=(2, 3)).shape) == (2, 3)
        assert x.new_ones((3,), layout=m.strided, pin_memory=False).dtype == m.float64
        assert tuple(x.new_empty(4).shape) == (4,)
        assert x.new_full((2,), 5.0, device="cpu").tolist() == [5.0, 5.0]
        assert x.new_tensor([1, 2], requires_grad=True).requires_grad


# ---------------------------------------------------------------------------- Tensor.to and casts
def test_to_refuses_unknown_keywords_as_torch():
    for m in (sf, torch):
        with pytest.raises(TypeError):
            m.ones(2).to(foo=1)
        with pytest.raises(RuntimeError):
            m.ones(2).to(memory_format=m.channels_last)
        y = m.ones(1, 2, 3, 4).to(memory_format=m.channels_last)
        assert tuple(y.shape) == (1, 2, 3, 4)
        assert m.ones(2).to(tensor=m.ones(1, dtype=m.float64)).dtype == m.float64


@pytest.mark.parametrize("cast", ["float", "double", "half", "long", "int", "bool", "bfloat16"])
def test_casts_take_memory_format(cast):
    x, t = sf.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0])
    got = getattr(x, cast)(memory_format=sf.preserve_format)
    want = getattr(t, cast)(memory_format=torch.preserve_format)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    with pytest.raises(TypeError):
        getattr(t, cast)(memory_format=3)
    with pytest.raises(TypeError):
        getattr(x, cast)(memory_format=3)
    assert x.cpu(memory_format=sf.preserve_format) is not None


# ---------------------------------------------------------------------------- shape keywords
@pytest.mark.parametrize("call", [
    "x.view(size=(3, 2))", "x.view(dtype={m}.int32)", "x.reshape(shape=(3, 2))",
    "x.permute(dims=(1, 0))", "x.flip(dims=(1,))", "x.tile(dims=(2,))", "x.expand(size=(2, 2, 3))",
    "x.repeat(repeats=(1, 2))", "{m}.reshape(x, shape=(6,))", "{m}.permute(x, dims=(1, 0))",
    "{m}.flip(x, dims=(0,))", "{m}.tile(x, dims=(2, 1))", "{m}.swapaxes(x, axis0=0, axis1=1)",
    "x.swapaxes(axis0=1, axis1=0)", "{m}.tensor_split(x, sections=2, dim=1)[1]",
    "{m}.tensor_split(x, indices=[1])[0]", "{m}.max(x, other=x.flip(0))",
    "{m}.min(x, other=x.flip(0))", "x.max(other=x.flip(1))",
])
def test_shape_keywords_match_torch(call):
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = eval(call.format(m="sf"), {"sf": sf, "x": sf.tensor(xs)})
    want = eval(call.format(m="torch"), {"torch": torch, "x": torch.tensor(xs)})
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_keyword_and_positional_together_raise():
    with pytest.raises(TypeError):
        sf.ones(2, 3).reshape(3, 2, shape=(6,))
    with pytest.raises(TypeError):
        sf.tensor_split(sf.ones(4), 2, sections=2)


def test_promote_types_names():
    assert sf.promote_types(type1=sf.float32, type2=sf.int64) is sf.float32
    assert torch.promote_types(type1=torch.float32, type2=torch.int64) is torch.float32


# ---------------------------------------------------------------------------- NumPy spellings
@pytest.mark.parametrize("call", [
    "{m}.sum(x, axis=0)", "x.sum(axis=1, keepdims=True)", "x.mean(axis=0)", "{m}.cat([x, x], axis=1)",
    "x.argmax(axis=1)", "x.max(axis=0).values", "{m}.add(x, x2=x)", "{m}.std(x, axis=1)",
    "{m}.softmax(x, axis=0)", "x.amax(axis=1, keepdims=True)",
])
def test_numpy_spellings_match_torch(call):
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = eval(call.format(m="sf"), {"sf": sf, "x": sf.tensor(xs)})
    want = eval(call.format(m="torch"), {"torch": torch, "x": torch.tensor(xs)})
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_numpy_spelling_does_not_hide_other_errors():
    for m in (sf, torch):
        x = m.ones(2, 3)
        with pytest.raises(TypeError):
            x.sum(bogus=1)
    with pytest.raises(TypeError):
        sf.ones(2).sum(axis=0, dim=0)  # both spellings: Python's "unexpected keyword" stands


def test_numpy_spelling_gradient():
    xs = np.arange(6, dtype=np.float64).reshape(2, 3)
    x, t = sf.tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
    (x * x).sum(axis=1, keepdims=True).mean().backward()
    (t * t).sum(axis=1, keepdims=True).mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


# ---------------------------------------------------------------------------- matmul out_dtype
@pytest.mark.parametrize("op", ["mm", "bmm", "addmm", "baddbmm"])
def test_out_dtype_low_precision_accumulates_in_float32(op):
    rng = np.random.default_rng(0)
    shapes = {"mm": [(3, 4), (4, 2)], "bmm": [(2, 3, 4), (2, 4, 2)],
              "addmm": [(3, 2), (3, 4), (4, 2)], "baddbmm": [(2, 3, 2), (2, 3, 4), (2, 4, 2)]}[op]
    arrs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    got = getattr(sf, op)(*[sf.tensor(a) for a in arrs], out_dtype=sf.float32)
    want = getattr(torch, op)(*[torch.tensor(a).float() for a in arrs])  # torch's CUDA semantics
    assert got.dtype is sf.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    same = getattr(sf, op)(*[sf.tensor(a) for a in arrs], out_dtype=sf.float16)
    assert same.dtype is sf.float16
    with pytest.raises(RuntimeError, match="out_dtype"):
        getattr(sf, op)(*[sf.tensor(a.astype(np.float32)) for a in arrs], out_dtype=sf.float16)


# ---------------------------------------------------------------------------- nn
def test_l1_loss_weight_values_and_gradient():
    rng = np.random.default_rng(1)
    a, b, w = (rng.standard_normal(5) for _ in range(3))
    w = np.abs(w)
    for reduction in ("mean", "sum", "none"):
        x, t = sf.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        got = sF.l1_loss(x, sf.tensor(b), reduction=reduction, weight=sf.tensor(w))
        want = torch.nn.functional.l1_loss(t, torch.tensor(b), reduction=reduction, weight=torch.tensor(w))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_hardtanh_deprecated_spellings():
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    outs = []
    for m in (sf, torch):
        with pytest.warns(FutureWarning) as caught:
            layer = m.nn.Hardtanh(min_value=-2.0, max_value=0.5)
        assert [("min_value" in str(w.message), "max_value" in str(w.message)) for w in caught] == [
            (True, False), (False, True)]
        outs.append(layer(m.tensor(x)).numpy())
    np.testing.assert_array_equal(*outs)


@pytest.mark.parametrize("name", ["LazyBatchNorm1d", "LazyInstanceNorm1d"])
def test_lazy_norm_bias_false(name):
    xs = np.random.default_rng(2).standard_normal((4, 3, 5)).astype(np.float32)
    outs = []
    for m in (sf, torch):
        layer = getattr(m.nn, name)(affine=True, bias=False)
        outs.append(layer(m.tensor(xs)).detach().numpy())
        assert layer.bias is None and tuple(layer.weight.shape) == (3,)
    np.testing.assert_allclose(*outs, rtol=1e-5, atol=1e-6)


def test_sync_batchnorm_bias_false():
    for m in (sf, torch):
        assert m.nn.SyncBatchNorm(3, bias=False).bias is None
        assert m.nn.SyncBatchNorm(3).bias is not None


# ---------------------------------------------------------------------------- optimizers
def test_adam_decoupled_weight_decay_is_adamw():
    w0 = np.array([1.0, -2.0, 3.0])
    out = []
    for m in (sf, torch):
        p = m.nn.Parameter(m.tensor(w0))
        opt = m.optim.Adam([p], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
        assert opt.param_groups[0]["decoupled_weight_decay"] is True
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(*out, rtol=1e-12)
    assert sf.optim.AdamW([sf.nn.Parameter(sf.ones(1))]).param_groups[0]["decoupled_weight_decay"] is True


def test_differentiable_optimizer_is_refused():
    for cls in ("SGD", "Adam", "RMSprop"):
        with pytest.raises(NotImplementedError, match="differentiable=True"):
            getattr(sf.optim, cls)([sf.nn.Parameter(sf.ones(1))], lr=0.1, differentiable=True)


# ---------------------------------------------------------------------------- **kwargs that dropped
def test_dropped_keywords_now_refused():
    for m in (sf, torch):
        with pytest.raises(TypeError):
            m.ones(2).new(2, foo=1)
    buf = io.BytesIO()
    sf.save({"a": sf.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(TypeError, match="foo"):
        sf.load(buf, foo=1)
    buf.seek(0)
    assert sf.load(buf, encoding="latin1")["a"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        sf.empty_strided((2,), (1,), foo=1)


def test_from_dlpack_device_and_copy():
    a = np.ones(3, dtype=np.float32)
    shared, copied = sf.from_dlpack(a, device="cpu"), sf.from_dlpack(a, copy=True)
    ta = torch.from_numpy(a.copy())
    tshared, tcopied = torch.from_dlpack(ta, device="cpu"), torch.from_dlpack(ta, copy=True)
    a[0] = 5.0
    ta[0] = 5.0
    assert shared.tolist() == tshared.tolist() == [5.0, 1.0, 1.0]
    assert copied.tolist() == tcopied.tolist() == [1.0, 1.0, 1.0]


def test_addcmul_addcdiv_keyword_names():
    xs = np.array([1.0, 2.0])
    for op in ("addcmul_", "addcdiv_"):
        got = getattr(sf.tensor(xs), op)(tensor1=sf.tensor(xs), tensor2=sf.tensor(xs + 1), value=2)
        want = getattr(torch.tensor(xs), op)(tensor1=torch.tensor(xs), tensor2=torch.tensor(xs + 1), value=2)
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_no_warning_on_plain_calls():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sf.zeros(2)
        sf.ones(2).to(sf.float64)


def test_like_makers_and_clone_take_input_keyword():
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    for name in ("zeros_like", "ones_like", "clone"):
        got = getattr(sf, name)(input=sf.tensor(xs))
        want = getattr(torch, name)(input=torch.tensor(xs))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert tuple(sf.randn_like(input=sf.tensor(xs)).shape) == (2, 3)


@pytest.mark.parametrize("method", ["clone", "contiguous"])
def test_clone_contiguous_check_memory_format(method):
    for m in (sf, torch):
        with pytest.raises(RuntimeError):
            getattr(m.ones(2), method)(memory_format=m.channels_last)
        y = getattr(m.arange(24.0).reshape(1, 2, 3, 4), method)(memory_format=m.channels_last)
        assert y.flatten().tolist() == list(np.arange(24.0))


@pytest.mark.parametrize("name", ["silu", "mish", "selu", "celu", "hardswish", "hardsigmoid"])
def test_activation_inplace_is_honoured(name):
    xs = np.linspace(-2.9, 2.9, 7)  # h = 1.5 x misses hardswish's kinks at +-3
    res = []
    for m in (sf, torch):
        w = m.tensor(xs, requires_grad=True)
        h = w * 1.5  # a non-leaf: in place is allowed
        out = getattr(m.nn.functional, name)(h, inplace=True)
        assert out is h
        (out * out).sum().backward()
        res.append((h.detach().numpy(), w.grad.numpy()))
        leaf = m.tensor(xs, requires_grad=True)
        with pytest.raises(RuntimeError):
            getattr(m.nn.functional, name)(leaf, inplace=True)
    # torch's hardsigmoid/hardswish use float32 constants even for float64
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["mse_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_weight_is_honoured(name, reduction):
    rng = np.random.default_rng(3)
    a, b, w = rng.standard_normal(5), rng.standard_normal(5), np.abs(rng.standard_normal(5))
    grads = []
    outs = []
    for m in (sf, torch):
        x = m.tensor(a, requires_grad=True)
        out = getattr(m.nn.functional, name)(x, m.tensor(b), reduction=reduction, weight=m.tensor(w))
        out.sum().backward()
        outs.append(out.detach().numpy())
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*outs, rtol=1e-12)
    np.testing.assert_allclose(*grads, rtol=1e-12)


def test_normalize_out_and_tensor_linalg_out():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3))
    for m in (sf, torch):
        o = m.empty(2, 3, dtype=m.float64)
        assert m.nn.functional.normalize(m.tensor(x), out=o) is o
        np.testing.assert_allclose(o.numpy(), torch.nn.functional.normalize(torch.tensor(x)).numpy())
    a = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).reshape(2, 2, 2, 2)
    for fn, args in (("tensorinv", (a,)), ("tensorsolve", (a, np.ones((2, 2))))):
        o = sf.empty(0, dtype=sf.float64)
        assert getattr(sf.linalg, fn)(*[sf.tensor(v) for v in args], out=o) is o
        want = getattr(torch.linalg, fn)(*[torch.tensor(v) for v in args])
        np.testing.assert_allclose(o.numpy(), want.numpy(), rtol=1e-10)


@pytest.mark.parametrize("call", [
    "tril_indices(3, 3, layout={m}.strided)", "triu_indices(3, 4, 1, layout={m}.strided)",
    "fft.fftfreq(5, layout={m}.strided)", "fft.rfftfreq(6, layout={m}.strided)",
])
def test_more_factories_check_layout(call):
    got, want = eval("sf." + call.format(m="sf")), eval("torch." + call.format(m="torch"))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(NotImplementedError, match="to_sparse"):
        eval("sf." + call.format(m="sf").replace("strided", "sparse_coo"))


def test_to_sparse_dense_dim_and_blocksize():
    xs = np.zeros((2, 2, 2), dtype=np.float32)
    xs[0, 0, 0] = 1.0
    got, want = sf.tensor(xs).to_sparse(dense_dim=1), torch.tensor(xs).to_sparse(dense_dim=1)
    assert (got.sparse_dim(), got.dense_dim()) == (want.sparse_dim(), want.dense_dim()) == (2, 1)
    np.testing.assert_array_equal(got.to_dense().numpy(), want.to_dense().numpy())
    for m in (sf, torch):
        with pytest.raises(RuntimeError):
            m.tensor(xs).to_sparse(blocksize=(1, 1))


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_and_foreach_together_refused(cls):
    for m in (sf, torch):
        with pytest.raises(RuntimeError, match="fused"):
            getattr(m.optim, cls)([m.nn.Parameter(m.ones(2))], lr=0.1, fused=True, foreach=True)
        getattr(m.optim, cls)([m.nn.Parameter(m.ones(2))], lr=0.1, fused=True)  # alone: accepted


@pytest.mark.parametrize("name, args", [
    ("Linear", (4, 3)), ("Conv2d", (2, 3, 3)), ("ConvTranspose1d", (2, 3, 3)), ("Embedding", (5, 3)),
    ("LayerNorm", (4,)), ("BatchNorm1d", (3,)), ("GroupNorm", (1, 4)), ("LSTM", (3, 4)), ("GRUCell", (3, 4)),
    ("MultiheadAttention", (4, 2)), ("PReLU", ()), ("RMSNorm", (4,)), ("Bilinear", (2, 3, 4)),
])
def test_layer_factory_kwargs_are_honoured(name, args):
    # accepted is not enough: device= and dtype= must reach every parameter and float buffer
    for m in (sf, torch):
        layer = getattr(m.nn, name)(*args, device="cpu", dtype=m.float64)
        tensors = list(layer.parameters()) + [b for b in layer.buffers() if b.dtype.is_floating_point]
        assert tensors and all(t.dtype == m.float64 for t in tensors)


@pytest.mark.parametrize("call", [
    "x.clone().swapaxes_(axis0=0, axis1=1)", "x.clone().cumsum_(axis=0)", "x.clone().tril_(diagonal=-1)",
    "x[:, :2].clone().addmm_(mat1=x[:, :2], mat2=x[:2, :2], beta=0.5)", "{m}.view_copy(x, dtype={m}.int32)",
    "{m}.permute_copy(x, dims=(1, 0))", "{m}.transpose_copy(x, dim0=0, dim1=1)",
])
def test_forwarded_keywords_match_torch(call):
    # in-place methods and *_copy ops forward their keywords: named now, so audited
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = eval(call.format(m="sf"), {"sf": sf, "x": sf.tensor(xs)})
    want = eval(call.format(m="torch"), {"torch": torch, "x": torch.tensor(xs)})
    np.testing.assert_array_equal(got.numpy(), want.numpy())
