"""nn ops beyond the spec table: error messages, running statistics, dropout statistics and
mask reuse in backward, attention corner cases, half precision."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import shardflow as sf
from shardflow.testing.gradcheck import gradcheck


def _pair(a, requires_grad=False):
    return sf.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


# ---------------------------------------------------------------------------- loss errors
def test_cross_entropy_out_of_range_target_names_value_and_classes():
    x = sf.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError, match=r"target 7 .*4 classes"):
        sf.cross_entropy(x, sf.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match=r"target -3 "):
        sf.cross_entropy(x, sf.tensor([0, -3, 1]))
    with pytest.raises(IndexError, match=r"target 4 "):
        sf.nll_loss(x, sf.tensor([4, 0, 1]))


def test_cross_entropy_float_target_wrong_shape_is_clear():
    x = sf.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(RuntimeError, match=r"integer tensor"):  # torch's type (float class indices)
        sf.cross_entropy(x, sf.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"expected target of shape \(3,\)"):
        sf.cross_entropy(x, sf.tensor([[0, 1], [2, 0], [1, 1]]))


@pytest.mark.parametrize("fname", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("x_shape, t_shape", [((3, 4), (1, 3)), ((1, 5), ()), ((3, 5), (2,)), ((2, 5, 4), (3, 4))])
def test_class_target_batch_mismatch_is_a_value_error_like_torch(fname, x_shape, t_shape):
    """torch checks the target's batch size first and raises ValueError ("Expected input
    batch_size (1) to match target batch_size (0)."): hunkim's seq2seq lectures pass a 0-d
    target for a (1, C) output; a batch that matches with a wrong trailing shape stays a
    RuntimeError (above), as in torch."""
    x = np.zeros(x_shape, np.float32)
    t = np.zeros(t_shape, np.int64)
    message = f"Expected input batch_size ({x_shape[0]}) to match target batch_size ({t_shape[0] if t_shape else 0})."
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(TF, fname)(torch.tensor(x), torch.tensor(t))
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(sf.nn.functional, fname)(sf.tensor(x), sf.tensor(t))


def test_cross_entropy_all_ignored_is_nan_like_torch():
    a = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    s = sf.cross_entropy(sf.tensor(a), sf.tensor([-100, -100]))
    t = TF.cross_entropy(torch.tensor(a), torch.tensor([-100, -100]))
    assert np.isnan(s.item()) and np.isnan(t.item())


def test_cross_entropy_large_vocab_matches_torch():
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((64, 500)) * 5).astype(np.float32)
    tgt = rng.integers(0, 500, 64)
    tgt[::7] = -1
    xs, xt = _pair(a, True)
    ls = sf.cross_entropy(xs, sf.tensor(tgt), ignore_index=-1)
    lt = TF.cross_entropy(xt, torch.tensor(tgt), ignore_index=-1)
    ls.backward()
    lt.backward()
    np.testing.assert_allclose(ls.item(), lt.item(), rtol=1e-5)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), atol=1e-7, rtol=1e-4)


def test_bad_reduction_and_bce_range():
    x = sf.tensor([0.2, 0.5])
    with pytest.raises(ValueError, match="reduction"):
        sf.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="between 0 and 1"):
        sf.binary_cross_entropy(sf.tensor([1.5, 0.5]), x)


def test_softmax_extreme_values_and_positional_dtype():
    a = np.array([[1000.0, 0.0, -1000.0], [-50.0, -50.0, -50.0]], np.float32)
    y = sf.softmax(sf.tensor(a), 1)
    np.testing.assert_allclose(y.numpy(), torch.softmax(torch.tensor(a), 1).numpy(), atol=1e-7)
    ls = sf.log_softmax(sf.tensor(a), 1)
    assert np.isfinite(ls.numpy()).all()
    y64 = sf.softmax(sf.tensor(a), 1, sf.float64)  # torch.softmax(x, dim, dtype) order
    assert y64.dtype == sf.float64


# ---------------------------------------------------------------------------- normalization
def test_batch_norm_running_stats_match_torch():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 3, 4)).astype(np.float32) * 2 + 1
    rm_s, rm_t = _pair(np.zeros(3, np.float32))
    rv_s, rv_t = _pair(np.ones(3, np.float32))
    for _ in range(2):
        sf.batch_norm(sf.tensor(a), rm_s, rv_s, training=True, momentum=0.3)
        TF.batch_norm(torch.tensor(a), rm_t, rv_t, training=True, momentum=0.3)
    np.testing.assert_allclose(rm_s.numpy(), rm_t.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv_s.numpy(), rv_t.numpy(), rtol=1e-5, atol=1e-6)
    ys = sf.batch_norm(sf.tensor(a), rm_s, rv_s, training=False)
    yt = TF.batch_norm(torch.tensor(a), rm_t, rv_t, training=False)
    np.testing.assert_allclose(ys.numpy(), yt.numpy(), rtol=1e-4, atol=1e-5)


def test_batch_norm_single_value_per_channel_raises():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        sf.batch_norm(sf.tensor(np.zeros((1, 3), np.float32)), None, None, training=True)


def test_instance_norm_running_stats_match_torch():
    a = np.random.default_rng(3).standard_normal((4, 2, 5)).astype(np.float32)
    rm_s, rm_t = _pair(np.zeros(2, np.float32))
    rv_s, rv_t = _pair(np.ones(2, np.float32))
    ys = sf.instance_norm(sf.tensor(a), rm_s, rv_s)
    yt = TF.instance_norm(torch.tensor(a), rm_t, rv_t)
    np.testing.assert_allclose(ys.numpy(), yt.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm_s.numpy(), rm_t.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv_s.numpy(), rv_t.numpy(), rtol=1e-5, atol=1e-6)


def test_norm_shape_errors():
    x = sf.tensor(np.zeros((2, 6), np.float32))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        sf.layer_norm(x, (4,))
    with pytest.raises(ValueError, match="num_groups=4 must divide"):
        sf.group_norm(x, 4)


def test_half_precision_layer_norm_and_softmax():
    a = np.random.default_rng(4).standard_normal((3, 8)).astype(np.float16)
    y = sf.layer_norm(sf.tensor(a), (8,))
    assert y.dtype == sf.float16
    ref = TF.layer_norm(torch.tensor(a.astype(np.float32)), (8,)).numpy()
    np.testing.assert_allclose(y.numpy().astype(np.float32), ref, atol=2e-3, rtol=2e-3)
    p = sf.softmax(sf.tensor(a), -1)
    assert p.dtype == sf.float16
    np.testing.assert_allclose(p.numpy().astype(np.float32), torch.softmax(torch.tensor(a).float(), -1).numpy(),
                               atol=1e-3)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_eps_zero_on_a_constant_row_gives_nan_like_torch(dtype):
    # 1 / sqrt(0): torch's inf, then NaN; the Numba kernel's ``/`` raised ZeroDivisionError
    x = np.ones((3, 8), dtype)
    x[1] = np.arange(8)
    (s, t) = _pair(x, requires_grad=True)
    ys, yt = sf.layer_norm(s, (8,), eps=0.0), TF.layer_norm(t, (8,), eps=0.0)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert np.isnan(ys.detach().numpy()[0]).all() and np.isfinite(ys.detach().numpy()[1]).all()


# ---------------------------------------------------------------------------- dropout
def test_dropout_statistics_and_backward_mask():
    sf.manual_seed(0)
    x = sf.tensor(np.ones((200, 100), np.float32), requires_grad=True)
    y = sf.dropout(x, p=0.3)
    out = y.numpy()
    kept = out != 0
    # 20000 draws: 5 standard errors of the kept fraction, sqrt(p (1 - p) / n) = 0.0032 each
    assert abs(kept.mean() - 0.7) <= 5 * np.sqrt(0.3 * 0.7 / kept.size), kept.mean()
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out)  # same mask, same scale


def test_dropout_reproducible_with_manual_seed_and_identity_in_eval():
    a = np.random.default_rng(5).standard_normal((10, 10)).astype(np.float32)
    sf.manual_seed(42)
    y1 = sf.dropout(sf.tensor(a), 0.5).numpy()
    sf.manual_seed(42)
    y2 = sf.dropout(sf.tensor(a), 0.5).numpy()
    np.testing.assert_array_equal(y1, y2)
    x = sf.tensor(a)
    assert sf.dropout(x, 0.5, training=False) is x
    assert np.all(sf.dropout(x, 1.0).numpy() == 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        sf.dropout(x, 1.5)


def test_dropout_inplace_writes_input():
    sf.manual_seed(1)
    x = sf.tensor(np.ones((50, 50), np.float32))
    y = sf.dropout(x, 0.5, inplace=True)
    assert y is x
    assert (x.numpy() == 0).any() and (x.numpy() == 2).any()


def test_dropout_float64_gradcheck_with_fixed_seed():
    a = np.random.default_rng(6).standard_normal((4, 5))

    def f(x):
        sf.manual_seed(3)
        return sf.dropout(x, 0.4)

    gradcheck(f, [sf.tensor(a, requires_grad=True)])


def test_dropout2d_zeroes_whole_channels():
    sf.manual_seed(2)
    x = sf.tensor(np.ones((80, 50, 3, 3), np.float32), requires_grad=True)
    y = sf.dropout2d(x, 0.5)
    out = y.numpy().reshape(80, 50, 9)
    per_channel = out.min(axis=2) == out.max(axis=2)
    assert per_channel.all()
    dropped = (out[:, :, 0] == 0).mean()  # 4000 channels: 5 standard errors are 0.04
    assert abs(dropped - 0.5) <= 5 * np.sqrt(0.25 / 4000), dropped
    np.testing.assert_array_equal(out[out != 0], 2.0)  # kept channels scaled by 1 / (1 - p)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())


def test_alpha_dropout_keeps_mean_and_variance():
    sf.manual_seed(4)
    a = np.random.default_rng(7).standard_normal((400, 400)).astype(np.float32)
    y = sf.alpha_dropout(sf.tensor(a), 0.2, training=True).numpy()
    # PyTorch's formula: kept x -> a x + alpha a p, dropped -> -alpha a (1 - p), with
    # a = ((alpha^2 p + 1)(1 - p))^-1/2: mean 0 and variance 1 for N(0, 1) input
    p, alpha = 0.2, 1.7580993408473766
    coef = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.abs(y + alpha * coef * (1 - p)) < 1e-6
    np.testing.assert_allclose(y[~dropped], coef * a[~dropped] + alpha * coef * p, rtol=1e-6, atol=1e-6)
    n = y.size  # 160000 independent elements: 5 standard errors
    assert abs(dropped.mean() - p) <= 5 * np.sqrt(p * (1 - p) / n), dropped.mean()
    m4 = np.mean((y.astype(np.float64) - y.mean()) ** 4)  # the sample's fourth moment
    assert abs(y.mean()) <= 5 / np.sqrt(n), y.mean()
    assert abs(y.var() - 1) <= 5 * np.sqrt((m4 - 1) / n), y.var()
    x = sf.tensor(a)
    assert sf.alpha_dropout(x, 0.2) is x  # training=False by default: identity

    def f(x):
        sf.manual_seed(5)
        return sf.alpha_dropout(x, 0.3, training=True)

    gradcheck(f, [sf.tensor(a[:3, :4].astype(np.float64), requires_grad=True)])


# ---------------------------------------------------------------------------- attention
def _qkv(seed=8, shape=(2, 2, 4, 3)):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]


def test_sdpa_bool_mask_with_causal_is_and():
    q, k, v = _qkv()
    m = np.random.default_rng(9).random((4, 4)) < 0.6
    m[:, 0] = True
    ys = sf.scaled_dot_product_attention(*map(sf.tensor, (q, k, v)), attn_mask=sf.tensor(m), is_causal=True)
    both = torch.tensor(m) & torch.ones(4, 4, dtype=torch.bool).tril()
    yt = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), attn_mask=both)
    np.testing.assert_allclose(ys.numpy(), yt.numpy(), atol=1e-5, rtol=1e-4)


def test_sdpa_fully_masked_row_gives_zeros_like_torch():
    q, k, v = _qkv()
    m = np.ones((4, 4), bool)
    m[2] = False
    qs, ks, vs = (sf.tensor(a, requires_grad=True) for a in (q, k, v))
    ys = sf.scaled_dot_product_attention(qs, ks, vs, attn_mask=sf.tensor(m))
    qt, kt, vt = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    yt = TF.scaled_dot_product_attention(qt, kt, vt, attn_mask=torch.tensor(m))
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), atol=1e-5, rtol=1e-4)
    ys.sum().backward()
    yt.sum().backward()
    for s, t in ((qs, qt), (ks, kt), (vs, vt)):
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), atol=1e-5, rtol=1e-4)


def test_sdpa_dropout_statistics_and_gradcheck():
    q, k, v = _qkv(shape=(1, 1, 64, 8))
    sf.manual_seed(0)
    y0 = sf.scaled_dot_product_attention(*map(sf.tensor, (q, k, v)))
    yd = [sf.scaled_dot_product_attention(*map(sf.tensor, (q, k, v)), dropout_p=0.5).numpy() for _ in range(200)]
    # inverted dropout is unbiased: the average over draws approaches the no-dropout output,
    # each element within 5 standard errors (its spread over the 200 draws / sqrt(200))
    yd_arr = np.stack(yd).astype(np.float64)
    se = yd_arr.std(0) / np.sqrt(len(yd))
    assert np.all(np.abs(yd_arr.mean(0) - y0.numpy()) <= 5 * se), np.max(np.abs(yd_arr.mean(0) - y0.numpy()) / se)
    assert not np.allclose(yd[0], yd[1])

    def f(a, b, c):
        sf.manual_seed(11)
        return sf.scaled_dot_product_attention(a, b, c, dropout_p=0.3)

    q64, k64, v64 = (x[..., :5, :].astype(np.float64) for x in (q, k, v))
    gradcheck(f, [sf.tensor(a, requires_grad=True) for a in (q64, k64, v64)])


def test_sdpa_shape_errors():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="embedding size"):
        sf.scaled_dot_product_attention(sf.tensor(q), sf.tensor(k[..., :2]), sf.tensor(v))
    with pytest.raises(ValueError, match="enable_gqa"):
        sf.scaled_dot_product_attention(sf.tensor(np.zeros((1, 4, 3, 2), np.float32)),
                                        sf.tensor(np.zeros((1, 2, 3, 2), np.float32)),
                                        sf.tensor(np.zeros((1, 2, 3, 2), np.float32)))


@pytest.mark.parametrize("kernel,stride", [(2, 2), (3, 2), (2, 1)])
def test_max_pool2d_ties_route_the_gradient_to_the_first_maximum_like_pytorch(kernel, stride):
    # relu output is full of exact zeros: whole windows tie, and PyTorch sends the gradient
    # to the first maximum in row-major window order
    r = np.random.default_rng(0)
    x = np.maximum(r.standard_normal((2, 3, 8, 8)), 0).astype(np.float32)
    x[0, 0, :4, :4] = 0.0
    g = r.standard_normal(torch.nn.functional.max_pool2d(torch.tensor(x), kernel, stride).shape).astype(np.float32)
    xs, xt = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys = sf.nn.functional.max_pool2d(xs, kernel, stride)
    yt = torch.nn.functional.max_pool2d(xt, kernel, stride)
    (ys * sf.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(ys.numpy(), yt.detach().numpy())
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 0, 4, 8), (0, 2, 4, 8), (2, 2, 0, 8)])
def test_sdpa_with_no_heads_or_an_empty_batch(shape):
    """A shard holding 0 heads (a 3-way split of 2 heads) or an empty batch: empty output
    and gradients of the inputs' shape, as PyTorch (the blocked path's head blocks are empty)."""
    import torch

    qkv = [sf.tensor(np.zeros(shape, np.float32), requires_grad=True) for _ in range(3)]
    out = sf.nn.functional.scaled_dot_product_attention(*qkv, is_causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *[torch.zeros(shape) for _ in range(3)], is_causal=True)
    assert tuple(out.shape) == tuple(ref.shape)
    out.sum().backward()
    for t in qkv:
        assert t.grad is not None and tuple(t.grad.shape) == shape
        assert not t.grad.numpy().any()
