"""Softmax-type ops flush subnormal float32 results to zero (see ``ops._util.flush_subnormal_``):
subnormal operands slow x86 GEMMs 10-100x. The values still match PyTorch."""

import numpy as np
import pytest
import torch as th

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.ops._util import flush_subnormal_

TINY = np.finfo(np.float32).tiny


def n_subnormal(a):
    a = np.abs(np.asarray(a))
    return int(np.count_nonzero((a > 0) & (a < TINY)))


def peaked_logits(n=64, c=32, spread=95.0, seed=0):
    """Rows whose softmax has entries between exp(-104) and exp(-87): subnormal in float32."""
    r = np.random.default_rng(seed)
    x = r.uniform(-spread, 0.0, (n, c)).astype(np.float32)
    x[:, 0] = 0.0
    return x


def test_flush_subnormal_zeroes_only_subnormals():
    a = np.array([1e-40, -1e-40, TINY, -TINY, 0.0, 1.0, -3.0, 5e-39], dtype=np.float32)
    out = flush_subnormal_(a)
    assert out is a
    np.testing.assert_array_equal(a, np.array([0, 0, TINY, -TINY, 0, 1, -3, 0], dtype=np.float32))
    ints = np.array([1, 2], dtype=np.int64)
    assert flush_subnormal_(ints) is ints


def test_peaked_logits_do_make_subnormals_without_the_flush():
    x = peaked_logits()
    p = np.exp(x - x.max(axis=1, keepdims=True))
    assert n_subnormal(p) > 0  # the fixture really exercises the case


@pytest.mark.parametrize("case", ["cross_entropy", "softmax", "log_softmax", "sdpa"])
def test_softmax_family_gradients_have_no_subnormals_and_match_torch(case):
    x = peaked_logits()
    t = np.random.default_rng(1).integers(0, x.shape[1], x.shape[0])
    w = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    xs, xt = sf.tensor(x, requires_grad=True), th.tensor(x, requires_grad=True)
    if case == "cross_entropy":
        ys, yt = F.cross_entropy(xs, sf.tensor(t)), th.nn.functional.cross_entropy(xt, th.tensor(t))
    elif case == "softmax":
        ys, yt = (F.softmax(xs, -1) * sf.tensor(w)).sum(), (th.softmax(xt, -1) * th.tensor(w)).sum()
        assert n_subnormal(F.softmax(xs, -1).numpy()) == 0
    elif case == "log_softmax":
        ys = F.nll_loss(F.log_softmax(xs, -1), sf.tensor(t))
        yt = th.nn.functional.nll_loss(th.log_softmax(xt, -1), th.tensor(t))
    else:  # scores q @ k^T = x exactly: one query row per logits row, identity keys
        q = x[None]  # (1, N, C)
        k = np.eye(x.shape[1], dtype=np.float32)[None]  # (1, C, C)
        v = w[: x.shape[1]][None]
        qs, qt = sf.tensor(q, requires_grad=True), th.tensor(q, requires_grad=True)
        xs, xt = qs, qt
        ys = F.scaled_dot_product_attention(qs, sf.tensor(k), sf.tensor(v), scale=1.0).sum()
        yt = th.nn.functional.scaled_dot_product_attention(qt, th.tensor(k), th.tensor(v), scale=1.0).sum()
    ys.backward()
    yt.backward()
    np.testing.assert_allclose(ys.item(), yt.item(), rtol=1e-5, atol=1e-6)
    assert n_subnormal(xs.grad.numpy()) == 0
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
