"""Layers vs PyTorch: build the same layer in both, load torch's state_dict into shardflow
(tensors converted with .numpy()), and compare forward outputs, input gradients, parameter
gradients and buffers after a step."""

import zlib

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn

RNG = np.random.default_rng(0)  # replaced before every test by _per_test_rng


@pytest.fixture(autouse=True)
def _per_test_rng(request):
    """Each test draws from its own generator, seeded from its name: its inputs do not
    depend on which tests ran before it (-k, -x, reordering, xdist)."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _to_sf(x):
    return sf.tensor(x, requires_grad=x.dtype.kind == "f")


def _to_torch(x):
    return torch.tensor(x, requires_grad=x.dtype.kind == "f")


def _close(a, b, atol, name):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=atol, err_msg=name)


def compare(build, inputs, *, train=False, steps=1, atol=1e-5, kwargs=None, grad=True):
    """Run ``build(torch.nn)`` and ``build(shardflow.nn)`` with equal weights on ``inputs``."""
    kwargs = kwargs or {}
    torch.manual_seed(0)
    tm = build(torch.nn)
    sm = build(nn)
    res = sm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys
    tm.train(train)
    sm.train(train)
    for _ in range(steps):
        t_in = [_to_torch(x) for x in inputs]
        s_in = [_to_sf(x) for x in inputs]
        t_out = tm(*t_in, **{k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()})
        s_out = sm(*s_in, **{k: (sf.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()})
        t_outs = t_out if isinstance(t_out, tuple) else (t_out,)
        s_outs = s_out if isinstance(s_out, tuple) else (s_out,)
        for i, (a, b) in enumerate(zip(s_outs, t_outs)):
            if b is None:
                assert a is None
                continue
            assert tuple(a.shape) == tuple(b.shape), f"output {i} shape"
            _close(a.numpy(), b.detach().numpy(), atol, f"output {i}")
        if grad:
            g = _randn(*t_outs[0].shape)
            t_outs[0].backward(torch.tensor(g))
            s_outs[0].backward(sf.tensor(g))
            for i, (a, b) in enumerate(zip(s_in, t_in)):
                if b.requires_grad:
                    _close(a.grad.numpy(), b.grad.numpy(), atol, f"input {i} grad")
    if grad:
        tp = dict(tm.named_parameters())
        for n, p in sm.named_parameters():
            if tp[n].grad is None:
                assert p.grad is None or not p.grad.numpy().any(), n
            else:
                _close(p.grad.numpy(), tp[n].grad.numpy(), atol, f"grad of {n}")
    tb = dict(tm.named_buffers())
    for n, b in sm.named_buffers():
        _close(b.numpy(), tb[n].numpy(), atol, f"buffer {n}")
    return sm, tm


def test_linear():
    compare(lambda m: m.Linear(5, 3), [_randn(2, 4, 5)])
    compare(lambda m: m.Linear(5, 3, bias=False), [_randn(7, 5)])


def test_mlp_sequential():
    compare(lambda m: m.Sequential(m.Linear(6, 8), m.GELU(), m.LayerNorm(8), m.Linear(8, 2), m.Tanh()),
            [_randn(4, 6)])


@pytest.mark.parametrize("build,shape", [
    (lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7)),
    (lambda m: m.Conv2d(4, 6, (3, 2), dilation=(2, 1), groups=2, bias=False), (2, 4, 8, 6)),
    (lambda m: m.Conv2d(2, 3, 3, padding="same"), (1, 2, 5, 6)),
    (lambda m: m.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 5, 6)),
    (lambda m: m.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), (1, 2, 5, 6)),
    (lambda m: m.Conv1d(3, 5, 3, stride=2, padding=2), (2, 3, 9)),
    (lambda m: m.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), (1, 3, 4, 4)),
])
def test_conv(build, shape):
    compare(build, [_randn(*shape)], atol=1e-4)


def test_batchnorm_train_updates_running_stats_like_torch():
    compare(lambda m: m.BatchNorm2d(3), [_randn(4, 3, 5, 5)], train=True, steps=2)
    compare(lambda m: m.BatchNorm1d(4), [_randn(6, 4)], train=True, steps=3)
    compare(lambda m: m.BatchNorm1d(4, momentum=None), [_randn(6, 4, 3)], train=True, steps=3)
    compare(lambda m: m.BatchNorm1d(4, affine=False), [_randn(6, 4)], train=True, steps=2)


def test_batchnorm_eval_uses_running_stats():
    tm = torch.nn.BatchNorm2d(3)
    sm = nn.BatchNorm2d(3)
    tm.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0]))
    tm.running_var.fill_(2.0)
    sm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    tm.eval()
    sm.eval()
    x = _randn(2, 3, 4, 4)
    _close(sm(sf.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), 1e-5, "eval bn")
    assert int(sm.num_batches_tracked) == 0  # eval does not count batches
    compare(lambda m: m.BatchNorm2d(3), [_randn(2, 3, 4, 4)], train=False)
    compare(lambda m: m.BatchNorm2d(3, track_running_stats=False), [_randn(2, 3, 4, 4)], train=False)


def test_layernorm_groupnorm_rmsnorm():
    compare(lambda m: m.LayerNorm(6), [_randn(2, 3, 6)])
    compare(lambda m: m.LayerNorm((3, 6), elementwise_affine=False), [_randn(2, 3, 6)])
    compare(lambda m: m.GroupNorm(2, 4), [_randn(3, 4, 5)])
    compare(lambda m: m.RMSNorm(6, eps=1e-6), [_randn(2, 6)])


def test_embedding_padding_idx_gets_no_grad():
    idx = np.array([[1, 2, 1, 0], [3, 1, 4, 4]], dtype=np.int64)
    sm, tm = compare(lambda m: m.Embedding(6, 3, padding_idx=1), [idx])
    assert not sm.weight.grad.numpy()[1].any()
    compare(lambda m: m.Embedding(6, 3), [idx])


@pytest.mark.parametrize("cfg", [
    dict(batch_first=True),
    dict(batch_first=False, bias=False),
    dict(batch_first=True, kdim=5, vdim=3),
    dict(batch_first=False, add_bias_kv=True),
    dict(batch_first=True, add_zero_attn=True),
])
def test_multihead_attention(cfg):
    e, h = 8, 2
    kd, vd = cfg.get("kdim", e), cfg.get("vdim", e)
    bf = cfg["batch_first"]
    q = _randn(3, 4, e) if bf else _randn(4, 3, e)
    k = _randn(3, 5, kd) if bf else _randn(5, 3, kd)
    v = _randn(3, 5, vd) if bf else _randn(5, 3, vd)
    compare(lambda m: m.MultiheadAttention(e, h, **cfg), [q, k, v], atol=1e-5)
    compare(lambda m: m.MultiheadAttention(e, h, **cfg), [q, k, v], atol=1e-5,
            kwargs=dict(average_attn_weights=False))
    compare(lambda m: m.MultiheadAttention(e, h, **cfg), [q, k, v], atol=1e-5,
            kwargs=dict(need_weights=False))


def test_multihead_attention_masks():
    e, h = 8, 4
    x = _randn(2, 5, e)
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, 3:] = True
    float_mask = _randn(5, 5)
    build = lambda m: m.MultiheadAttention(e, h, batch_first=True)  # noqa: E731
    compare(build, [x, x, x], kwargs=dict(attn_mask=causal))
    compare(build, [x, x, x], kwargs=dict(key_padding_mask=kpm))
    compare(build, [x, x, x], kwargs=dict(attn_mask=causal, key_padding_mask=kpm, need_weights=False))
    compare(build, [x, x, x], kwargs=dict(attn_mask=float_mask))
    mask3 = np.triu(np.ones((2 * h, 5, 5), dtype=bool), 1)
    compare(build, [x, x, x], kwargs=dict(attn_mask=mask3))
    # unbatched (L, E)
    xu = _randn(5, e)
    compare(build, [xu, xu, xu], kwargs=dict(attn_mask=causal))


def test_multihead_attention_loads_torch_packed_weights():
    tm = torch.nn.MultiheadAttention(8, 2)
    sm = nn.MultiheadAttention(8, 2)
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in sm.named_parameters()] == [n for n, _ in tm.named_parameters()]


@pytest.mark.parametrize("build", [
    lambda m: m.ReLU(), lambda m: m.GELU(), lambda m: m.GELU(approximate="tanh"), lambda m: m.SiLU(),
    lambda m: m.Tanh(), lambda m: m.Sigmoid(), lambda m: m.Softmax(dim=1), lambda m: m.LogSoftmax(dim=-1),
    lambda m: m.LeakyReLU(0.2), lambda m: m.ELU(0.7), lambda m: m.Softplus(beta=2.0, threshold=5.0),
    lambda m: m.Hardtanh(-0.5, 0.5), lambda m: m.ReLU6(), lambda m: m.Mish(), lambda m: m.Hardswish(),
    lambda m: m.LogSigmoid(), lambda m: m.Softsign(), lambda m: m.GLU(), lambda m: m.Identity(),
    lambda m: m.Flatten(), lambda m: m.Unflatten(1, (2, 3)), lambda m: m.Softmin(dim=0),
])
def test_activations_and_shapes(build):
    x = _randn(4, 6)
    x[np.abs(x) < 1e-3] = 0.5  # keep away from kinks
    compare(build, [x])


@pytest.mark.parametrize("build,shape", [
    (lambda m: m.MaxPool2d(2), (2, 3, 6, 6)),
    (lambda m: m.MaxPool2d(3, stride=2, padding=1), (1, 2, 7, 7)),
    (lambda m: m.AvgPool2d(2), (2, 3, 6, 6)),
    (lambda m: m.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (1, 2, 7, 7)),
    (lambda m: m.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 5)),
    (lambda m: m.AdaptiveAvgPool2d((2, 3)), (2, 3, 5, 7)),
])
def test_pooling(build, shape):
    compare(build, [_randn(*shape)])


@pytest.mark.parametrize("name,make", [
    ("CrossEntropyLoss", lambda m: m.CrossEntropyLoss()),
    ("CrossEntropyLoss_ls", lambda m: m.CrossEntropyLoss(label_smoothing=0.1, ignore_index=2)),
    ("NLLLoss", lambda m: m.NLLLoss(reduction="sum")),
    ("MSELoss", lambda m: m.MSELoss()),
    ("L1Loss", lambda m: m.L1Loss(reduction="none")),
    ("SmoothL1Loss", lambda m: m.SmoothL1Loss(beta=0.5)),
    ("BCEWithLogitsLoss", lambda m: m.BCEWithLogitsLoss()),
    ("HuberLoss", lambda m: m.HuberLoss(delta=0.5)),
])
def test_losses(name, make):
    logits = _randn(6, 4)
    if name in ("CrossEntropyLoss", "CrossEntropyLoss_ls", "NLLLoss"):
        target = RNG.integers(0, 4, size=6).astype(np.int64)
    elif name == "BCEWithLogitsLoss":
        target = RNG.random((6, 4)).astype(np.float32)
    else:
        target = _randn(6, 4)
    t_in = torch.tensor(logits, requires_grad=True)
    s_in = sf.tensor(logits, requires_grad=True)
    tl = make(torch.nn)(t_in, torch.tensor(target))
    sl = make(nn)(s_in, sf.tensor(target))
    _close(sl.numpy(), tl.detach().numpy(), 1e-5, name)
    tl.sum().backward()
    sl.sum().backward()
    _close(s_in.grad.numpy(), t_in.grad.numpy(), 1e-5, name + " grad")


def test_weighted_cross_entropy_weight_is_buffer():
    w = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    loss = nn.CrossEntropyLoss(weight=sf.tensor(w))
    assert list(loss.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.tensor(w)).state_dict())
    x, t = _randn(5, 3), RNG.integers(0, 3, size=5)
    ref = torch.nn.CrossEntropyLoss(weight=torch.tensor(w))(torch.tensor(x), torch.tensor(t))
    _close(loss(sf.tensor(x), sf.tensor(t)).numpy(), ref.numpy(), 1e-5, "weighted ce")


def test_dropout_train_eval():
    sf.manual_seed(0)
    d = nn.Dropout(0.3)
    x = sf.ones(200, 100)
    y = d(x).numpy()
    zero_frac = (y == 0).mean()
    assert abs(zero_frac - 0.3) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    d.eval()
    assert np.array_equal(d(x).numpy(), x.numpy())
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.9))
    m.eval()
    xi = _randn(4, 3)
    np.testing.assert_allclose(m(sf.tensor(xi)).numpy(), m[0](sf.tensor(xi)).numpy())


def test_model_to_double_then_forward_backward():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).double()
    x = sf.tensor(_randn(5, 3).astype(np.float64))
    out = m(x)
    assert out.dtype == sf.float64
    out.sum().backward()
    assert m[0].weight.grad.dtype == sf.float64


def _resnet_block(m):
    """torchvision's BasicBlock, written once for both libraries (inplace ReLU included)."""

    class Block(m.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = m.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
            self.bn1 = m.BatchNorm2d(4)
            self.relu = m.ReLU(inplace=True)
            self.conv2 = m.Conv2d(4, 4, 3, padding=1, bias=False)
            self.bn2 = m.BatchNorm2d(4)
            self.downsample = m.Sequential(m.Conv2d(3, 4, 1, stride=2, bias=False), m.BatchNorm2d(4))
            self.pool = m.AdaptiveAvgPool2d((1, 1))
            self.fc = m.Linear(4, 3)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.downsample(x)
            out = self.relu(out)
            return self.fc(self.pool(out).flatten(1))

    return Block()


def test_resnet_block_train_step():
    compare(_resnet_block, [_randn(2, 3, 8, 8)], train=True, steps=2, atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder(norm_first):
    def build(m):
        layer = m.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                          norm_first=norm_first, activation="gelu")
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(8), enable_nested_tensor=False)

    kpm = np.zeros((2, 5), dtype=bool)
    kpm[0, 4] = True
    compare(build, [_randn(2, 5, 8)], train=True, kwargs=dict(src_key_padding_mask=kpm), atol=1e-4)
    compare(build, [_randn(2, 5, 8)], train=True,
            kwargs=dict(mask=np.triu(np.ones((5, 5), dtype=bool), 1)), atol=1e-4)
