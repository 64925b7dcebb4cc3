"""Random and uninitialised factories, and the channel dropouts: what cannot be compared with
PyTorch value by value is checked here instead of in the spec table (see
``test_op_coverage.CHECKED_ELSEWHERE``): shapes and dtypes against the same torch call,
ranges, moments, frequencies and the whole distribution on a few thousand draws,
reproducibility under ``manual_seed``, and gradients through the drawn masks.

Every statistical bound is derived from the sample size: ``Z = 5`` standard errors of the
estimate under the known distribution (``sd / sqrt(n)`` for a mean, ``sqrt((m4 - var^2) / n)``
for a variance, ``sqrt(p (1 - p) / n)`` for a frequency), so a correct sampler fails one check
with probability about 1e-6 while a wrong mean, scale or probability fails it; the whole
distribution is checked with the Dvoretzky-Kiefer-Wolfowitz bound
``P(sup |F_n - F| > eps) <= 2 exp(-2 n eps^2)`` at the same 1e-6. The generators are seeded,
so every run draws the same numbers.
"""

import itertools
import math

import numpy as np
import pytest
import torch

import shardflow as sf

Z = 5.0  # standard errors
FALSE_ALARM = 1e-6  # the DKW bound's probability, about that of a 5-sigma excursion


def _same_meta(s, t):
    assert tuple(s.shape) == tuple(t.shape)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (s.dtype, t.dtype)


def _check_mean(values, mean, sd, what):
    """The mean of ``values`` (n draws along axis 0) within Z standard errors ``sd / sqrt(n)``."""
    n = values.shape[0]
    err, bound = np.abs(values.mean(0) - mean), Z * np.asarray(sd) / math.sqrt(n)
    assert np.all(err <= bound), f"{what}: mean off by {err}, allowed {bound} ({Z} s.e. for n={n})"


def _check_variance(values, var, m4, what):
    """The variance of ``values`` within Z standard errors ``sqrt((m4 - var^2) / n)``, where
    ``m4`` is the distribution's fourth central moment."""
    n = values.shape[0]
    err = np.abs(values.var(0) - var)
    bound = Z * np.sqrt((np.asarray(m4) - np.asarray(var) ** 2) / n)
    assert np.all(err <= bound), f"{what}: variance off by {err}, allowed {bound} ({Z} s.e. for n={n})"


def _check_frequencies(values, support, probs, what):
    """How often each value of ``support`` occurs, within Z standard errors of ``probs``."""
    values = np.asarray(values).ravel()
    n = values.size
    freq = np.array([(values == s).mean() for s in support])
    probs = np.broadcast_to(np.asarray(probs, np.float64), freq.shape)
    bound = Z * np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(freq - probs) <= bound), f"{what}: frequencies {freq}, expected {probs} +- {bound}"
    assert np.isin(values, support).all(), f"{what}: values outside {support}"


def _check_cdf(values, cdf, what):
    """The empirical CDF within the DKW bound of ``cdf`` (the whole distribution, not only
    its first two moments)."""
    v = np.sort(np.asarray(values, np.float64).ravel())
    n = v.size
    f = cdf(v)
    gap = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    eps = math.sqrt(math.log(2 / FALSE_ALARM) / (2 * n))
    assert gap <= eps, f"{what}: empirical CDF off by {gap:.4f}, DKW allows {eps:.4f} for n={n}"


def _normal_cdf(v):
    return torch.special.ndtr(torch.from_numpy(v)).numpy()


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
        assert not np.array_equal(getattr(sf, name)(*args).numpy(), x.numpy())  # the state moved on
        v = x.numpy().astype(np.float64).ravel()
        if name.startswith("randn"):  # N(0, 1): fourth central moment 3
            _check_mean(v, 0.0, 1.0, name)
            _check_variance(v, 1.0, 3.0, name)
            _check_cdf(v, _normal_cdf, name)
        else:  # U[0, 1): variance 1/12, fourth central moment 1/80
            assert v.min() >= 0 and v.max() < 1, (name, v.min(), v.max())
            _check_mean(v, 0.5, math.sqrt(1 / 12), name)
            _check_variance(v, 1 / 12, 1 / 80, name)
            _check_cdf(v, lambda t: t, name)
    assert sf.rand(2, 3, dtype=sf.float64).dtype == sf.float64
    assert sf.randn(4, requires_grad=True).requires_grad


def test_normal_tensor_mean_default_std_like_torch():
    """``normal(mean_tensor)``: std defaults to 1 for a tensor mean (MorvanZhou's 306_optimizer
    draws its noise with ``torch.normal(torch.zeros(*x.size()))``), the same numbers as torch
    from the same seed, keyword or positional; a number mean without std is torch's TypeError."""
    mean = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for call in (lambda lib, m: lib.normal(m), lambda lib, m: lib.normal(mean=m)):
        torch.manual_seed(3)
        want = call(torch, torch.from_numpy(mean)).numpy()
        sf.manual_seed(3)
        got = call(sf, sf.from_numpy(mean)).numpy()
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float32
    for lib in (torch, sf):
        with pytest.raises(TypeError, match="must be Tensor, not float"):
            lib.normal(2.0)
        with pytest.raises(TypeError):
            lib.normal(lib.zeros(2), None)
        with pytest.raises(TypeError):
            lib.normal(lib.zeros(2), std=None)


def test_normal_broadcasts_mean_and_std():
    sf.manual_seed(5)
    mean, std = sf.tensor([[-3.0], [0.0], [4.0]]), sf.tensor([0.5, 1.0, 2.0, 0.1])
    x = sf.normal(mean.expand(3, 4).contiguous(), std).numpy()
    _same_meta(sf.tensor(x), torch.normal(torch.zeros(3, 4), torch.ones(4)))
    draws = np.stack([sf.normal(mean.expand(3, 4).contiguous(), std).numpy() for _ in range(2000)])
    draws = draws.astype(np.float64)  # (2000, 3, 4)
    mu = np.broadcast_to(mean.numpy(), (3, 4))
    sd = np.broadcast_to(std.numpy(), (3, 4)).astype(np.float64)
    _check_mean(draws, mu, sd, "normal(mean, std) per element")  # bounds from 0.011 (std 0.1) up
    _check_variance(draws, sd ** 2, 3 * sd ** 4, "normal(mean, std) per element")
    _check_cdf((draws - mu) / sd, _normal_cdf, "normal(mean, std) standardised")
    y = sf.normal(2.0, 3.0, size=(4000,))
    _same_meta(y, torch.normal(2.0, 3.0, size=(4000,)))
    v = y.numpy().astype(np.float64)
    _check_mean(v, 2.0, 3.0, "normal(2, 3)")
    _check_variance(v, 9.0, 3 * 81.0, "normal(2, 3)")
    _check_cdf((v - 2.0) / 3.0, _normal_cdf, "normal(2, 3) standardised")


def test_integer_factories():
    sf.manual_seed(7)
    r = sf.randint(-3, 5, (4000,))
    _same_meta(r, torch.randint(-3, 5, (4000,)))
    _check_frequencies(r.numpy(), list(range(-3, 5)), 1 / 8, "randint(-3, 5)")
    like = sf.zeros(3, 1000)
    ri = sf.randint_like(like, 0, 4)
    _same_meta(ri, torch.randint_like(torch.zeros(3, 1000), 0, 4))
    _check_frequencies(ri.numpy(), [0.0, 1.0, 2.0, 3.0], 1 / 4, "randint_like(0, 4)")
    p = sf.randperm(50)
    _same_meta(p, torch.randperm(50))
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(50))
    # every ordering equally likely: 20000 shuffles of 3 items tell 1/6 from the 4/27 and 5/27
    # of the classic biased shuffle (swap each item with any position)
    perms = np.stack([sf.randperm(3).numpy() for _ in range(20000)])
    assert (np.sort(perms, axis=1) == np.arange(3)).all()
    codes = perms @ (3 ** np.arange(3))  # one integer per ordering
    support = [int(np.array(q) @ (3 ** np.arange(3))) for q in itertools.permutations(range(3))]
    _check_frequencies(codes, support, 1 / 6, "randperm(3) orderings")


def test_bernoulli_frequencies():
    sf.manual_seed(11)
    probs = sf.tensor(np.tile(np.array([0.1, 0.5, 0.9], np.float32), (4000, 1)))
    b = sf.bernoulli(probs)
    _same_meta(b, torch.bernoulli(torch.tensor(probs.numpy())))
    v = b.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    for j, pj in enumerate([0.1, 0.5, 0.9]):  # P(1) = p, per column
        _check_frequencies(v[:, j], [1.0, 0.0], [pj, 1 - pj], f"bernoulli({pj})")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_empty_shapes_and_dtypes(dtype):
    e = sf.empty(2, 3, dtype=getattr(sf, dtype))
    _same_meta(e, torch.empty(2, 3, dtype=getattr(torch, dtype)))
    src = sf.ones(4, 1, dtype=getattr(sf, dtype))
    _same_meta(sf.empty_like(src), torch.empty_like(torch.ones(4, 1, dtype=getattr(torch, dtype))))
    assert sf.empty((0, 5)).shape == (0, 5)


@pytest.mark.parametrize("name,shape", [("dropout1d", (100, 60, 5)), ("dropout3d", (100, 60, 2, 2, 2))])
def test_channel_dropouts_drop_whole_channels(name, shape):
    sf.manual_seed(13)
    x = sf.tensor(np.ones(shape, np.float32), requires_grad=True)
    y = getattr(sf, name)(x, 0.4)
    out = y.numpy().reshape(shape[0], shape[1], -1)
    assert (out.min(axis=2) == out.max(axis=2)).all()  # one draw per (sample, channel)
    kept = out[:, :, 0] != 0
    _check_frequencies(kept, [True, False], [0.6, 0.4], f"{name} kept channels")  # 6000 channels
    np.testing.assert_allclose(out[:, :, 0][kept], 1 / 0.6, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())  # the same mask in backward
    assert getattr(sf, name)(x, 0.4, training=False) is x


def test_feature_alpha_dropout_keeps_mean_and_variance():
    """PyTorch's formula (``torch.nn.functional.feature_alpha_dropout``): a kept channel is
    ``a x + alpha a p``, a dropped one the constant ``-alpha a (1 - p)``, with
    ``a = ((alpha^2 p + 1)(1 - p))^-1/2``; that keeps mean 0 and variance 1 for N(0, 1) input."""
    sf.manual_seed(17)
    p, alpha = 0.2, 1.7580993408473766
    a_coef = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    x = np.random.default_rng(8).standard_normal((200, 100, 4, 4)).astype(np.float32)
    y = sf.feature_alpha_dropout(sf.tensor(x), p, training=True).numpy()
    flat, xf = y.reshape(200, 100, 16), x.reshape(200, 100, 16)
    dropped = np.abs(flat + alpha * a_coef * (1 - p)).max(axis=2) < 1e-6
    kept_ref = a_coef * xf + alpha * a_coef * p
    np.testing.assert_allclose(flat[~dropped], kept_ref[~dropped], rtol=1e-6, atol=1e-6)
    _check_frequencies(dropped, [True, False], [p, 1 - p], "dropped channels")  # 20000 channels
    # the channels are the independent units: moments of the per-channel averages
    chan_mean, chan_sq = flat.astype(np.float64).mean(2), (flat.astype(np.float64) ** 2).mean(2)
    _check_mean(chan_mean.ravel(), 0.0, chan_mean.std(), "output mean")
    _check_mean(chan_sq.ravel(), 1.0, chan_sq.std(), "output second moment")
    t = sf.tensor(x)
    assert sf.feature_alpha_dropout(t, 0.2) is t  # training=False by default: identity
