"""nn.functional wrappers vs torch.nn.functional (forward and input gradient)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import shardflow as sf
import shardflow.nn.functional as F

# Fixed inputs, made once from their own seeds; a test that needs more random values makes
# its own generator, so no test's data depends on which tests ran before it.
X = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32)
X[np.abs(X) < 0.05] = 0.3
X[np.abs(np.abs(X) - 0.5) < 0.05] = 0.8  # away from shrink kinks
W = np.random.default_rng(2).standard_normal(4).astype(np.float32)

CASES = [
    ("relu", lambda f, x: f.relu(x)),
    ("relu6", lambda f, x: f.relu6(x * 4)),
    ("gelu_tanh", lambda f, x: f.gelu(x, approximate="tanh")),
    ("silu", lambda f, x: f.silu(x)),
    ("softplus", lambda f, x: f.softplus(x, beta=2, threshold=1.0)),
    ("leaky_relu", lambda f, x: f.leaky_relu(x, 0.1)),
    ("elu", lambda f, x: f.elu(x, 0.5)),
    ("selu", lambda f, x: f.selu(x)),
    ("celu", lambda f, x: f.celu(x, 0.7)),
    ("hardtanh", lambda f, x: f.hardtanh(x, -0.4, 0.6)),
    ("softsign", lambda f, x: f.softsign(x)),
    ("tanhshrink", lambda f, x: f.tanhshrink(x)),
    ("logsigmoid", lambda f, x: f.logsigmoid(x)),
    ("softmax", lambda f, x: f.softmax(x, dim=1)),
    ("log_softmax", lambda f, x: f.log_softmax(x, -1)),
    ("softmin", lambda f, x: f.softmin(x, dim=2)),
    ("glu", lambda f, x: f.glu(x, dim=1)),
    ("threshold", lambda f, x: f.threshold(x, 0.1, -2.0)),
    ("hardshrink", lambda f, x: f.hardshrink(x, 0.5)),
    ("softshrink", lambda f, x: f.softshrink(x, 0.5)),
    ("normalize", lambda f, x: f.normalize(x, dim=1)),
    ("cosine_similarity", lambda f, x: f.cosine_similarity(x, x * x + 1, dim=2)),
    ("layer_norm", lambda f, x: f.layer_norm(x, (5,))),
    ("group_norm", lambda f, x: f.group_norm(x, 2)),
    ("pad", lambda f, x: f.pad(x, (1, 2, 0, 1), value=0.5)),
    ("pixel_shuffle", lambda f, x: f.pixel_shuffle(x.reshape(1, 4, 3, 5), 2)),
    ("pixel_unshuffle", lambda f, x: f.pixel_unshuffle(x.reshape(1, 1, 6, 10), 2)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_functional_matches_torch(name, fn):
    xs = sf.tensor(X, requires_grad=True)
    xt = torch.tensor(X, requires_grad=True)
    ys, yt = fn(F, xs), fn(TF, xt)
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = np.random.default_rng(3).standard_normal(tuple(yt.shape)).astype(np.float32)
    ys.backward(sf.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_prelu_and_one_hot():
    xs, xt = sf.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    ws, wt = sf.tensor(W, requires_grad=True), torch.tensor(W, requires_grad=True)
    ys, yt = F.prelu(xs, ws), TF.prelu(xt, wt)
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-5)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(ws.grad.numpy(), wt.grad.numpy(), rtol=1e-4)
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(F.one_hot(sf.tensor(idx)).numpy(), TF.one_hot(torch.tensor(idx)).numpy())
    np.testing.assert_array_equal(F.one_hot(sf.tensor(idx), 6).numpy(), TF.one_hot(torch.tensor(idx), 6).numpy())


def test_sdpa_and_mha_functional():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    out = F.scaled_dot_product_attention(sf.tensor(q), sf.tensor(k), sf.tensor(v), is_causal=True)
    ref = TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


def test_softmax_implicit_dim_warns_like_torch():
    with pytest.warns(UserWarning):
        y = F.softmax(sf.tensor(X[0]))
    with pytest.warns(UserWarning):
        r = TF.softmax(torch.tensor(X[0]))
    np.testing.assert_allclose(y.numpy(), r.numpy(), rtol=1e-5)


def test_dropout_p_validation():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(sf.ones(2), p=1.5)
    x = sf.ones(3)
    assert F.dropout(x, 0.5, training=False) is x
