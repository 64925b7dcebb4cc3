"""Random and uninitialised factories, and the channel dropouts: what cannot be compared with
PyTorch value by value is checked here instead of in the spec table (see
``test_op_coverage.CHECKED_ELSEWHERE``): shapes and dtypes against the same torch call,
ranges, moments and frequencies on a few thousand draws (bounds of about 5 standard
errors), reproducibility under ``manual_seed``, and gradients through the drawn masks."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _same_meta(s, t):
    assert tuple(s.shape) == tuple(t.shape)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (s.dtype, t.dtype)


def test_uniform_and_normal_factories():
    like = sf.zeros(100, 50, dtype=sf.float64)
    for name, args in (("rand", (100, 50)), ("randn", (100, 50)), ("rand_like", (like,)),
                       ("randn_like", (like,))):
        targs = [torch.zeros(100, 50, dtype=torch.float64) if isinstance(a, sf.Tensor) else a for a in args]
        sf.manual_seed(3)
        x = getattr(sf, name)(*args)
        _same_meta(x, getattr(torch, name)(*targs))
        sf.manual_seed(3)
        np.testing.assert_array_equal(getattr(sf, name)(*args).numpy(), x.numpy())  # reproducible
        v = x.numpy()
        if name.startswith("rand") and not name.startswith("randn"):
            assert v.min() >= 0 and v.max() < 1 and abs(v.mean() - 0.5) < 0.02 and abs(v.var() - 1 / 12) < 0.01
        else:
            assert abs(v.mean()) < 0.04 and abs(v.std() - 1) < 0.04
    assert sf.rand(2, 3, dtype=sf.float64).dtype == sf.float64
    assert sf.randn(4, requires_grad=True).requires_grad


def test_normal_broadcasts_mean_and_std():
    sf.manual_seed(5)
    mean, std = sf.tensor([[-3.0], [0.0], [4.0]]), sf.tensor([0.5, 1.0, 2.0, 0.1])
    x = sf.normal(mean.expand(3, 4).contiguous(), std).numpy()
    _same_meta(sf.tensor(x), torch.normal(torch.zeros(3, 4), torch.ones(4)))
    draws = np.stack([sf.normal(mean.expand(3, 4).contiguous(), std).numpy() for _ in range(2000)])
    np.testing.assert_allclose(draws.mean(0), np.broadcast_to(mean.numpy(), (3, 4)), atol=0.25)
    np.testing.assert_allclose(draws.std(0), np.broadcast_to(std.numpy(), (3, 4)), rtol=0.08)
    y = sf.normal(2.0, 3.0, size=(4000,))
    _same_meta(y, torch.normal(2.0, 3.0, size=(4000,)))
    assert abs(y.numpy().mean() - 2) < 0.3 and abs(y.numpy().std() - 3) < 0.2


def test_integer_factories():
    sf.manual_seed(7)
    r = sf.randint(-3, 5, (4000,))
    _same_meta(r, torch.randint(-3, 5, (4000,)))
    assert set(np.unique(r.numpy())) == set(range(-3, 5))
    like = sf.zeros(3, 1000)
    ri = sf.randint_like(like, 0, 4)
    _same_meta(ri, torch.randint_like(torch.zeros(3, 1000), 0, 4))
    assert set(np.unique(ri.numpy())) == {0.0, 1.0, 2.0, 3.0}
    p = sf.randperm(50)
    _same_meta(p, torch.randperm(50))
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(50))
    assert not np.array_equal(p.numpy(), np.arange(50))


def test_bernoulli_frequencies():
    sf.manual_seed(11)
    probs = sf.tensor(np.tile(np.array([0.1, 0.5, 0.9], np.float32), (4000, 1)))
    b = sf.bernoulli(probs)
    _same_meta(b, torch.bernoulli(torch.tensor(probs.numpy())))
    v = b.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    np.testing.assert_allclose(v.mean(0), [0.1, 0.5, 0.9], atol=0.03)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_empty_shapes_and_dtypes(dtype):
    e = sf.empty(2, 3, dtype=getattr(sf, dtype))
    _same_meta(e, torch.empty(2, 3, dtype=getattr(torch, dtype)))
    src = sf.ones(4, 1, dtype=getattr(sf, dtype))
    _same_meta(sf.empty_like(src), torch.empty_like(torch.ones(4, 1, dtype=getattr(torch, dtype))))
    assert sf.empty((0, 5)).shape == (0, 5)


@pytest.mark.parametrize("name,shape", [("dropout1d", (40, 30, 5)), ("dropout3d", (10, 30, 2, 2, 2))])
def test_channel_dropouts_drop_whole_channels(name, shape):
    sf.manual_seed(13)
    x = sf.tensor(np.ones(shape, np.float32), requires_grad=True)
    y = getattr(sf, name)(x, 0.4)
    out = y.numpy().reshape(shape[0], shape[1], -1)
    assert (out.min(axis=2) == out.max(axis=2)).all()  # one draw per (sample, channel)
    kept = out[:, :, 0] != 0
    assert abs(kept.mean() - 0.6) < 0.06
    np.testing.assert_allclose(out[:, :, 0][kept], 1 / 0.6, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())  # the same mask in backward
    assert getattr(sf, name)(x, 0.4, training=False) is x


def test_feature_alpha_dropout_keeps_mean_and_variance():
    sf.manual_seed(17)
    a = np.random.default_rng(8).standard_normal((200, 100, 4, 4)).astype(np.float32)
    y = sf.feature_alpha_dropout(sf.tensor(a), 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.04
    flat = y.reshape(200, 100, 16)
    constant = flat.min(axis=2) == flat.max(axis=2)  # a dropped channel is one value
    assert abs(constant.mean() - 0.2) < 0.02
    x = sf.tensor(a)
    assert sf.feature_alpha_dropout(x, 0.2) is x  # training=False by default: identity
