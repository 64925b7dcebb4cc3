"""float16/bfloat16 sums and Linear's bias against PyTorch 2.13 CPU, which accumulates both
2-byte dtypes in float32 and rounds once: ``sum``/``mean`` (and so a bias gradient), and
``F.linear``'s ``x @ W.T + b`` (addmm adds the bias in its float32 accumulator). NumPy alone
rounds every partial sum to the 2-byte dtype: a bfloat16 sum of 128 numbers came out several
ulps off, which made bfloat16-autocast training drift from torch's (build-nanogpt's
train_gpt2.py, tests/parity/test_public_programs_more_c.py)."""

import numpy as np
import pytest
import torch

import shardflow
import shardflow.nn.functional as F

DTYPES = ["bfloat16", "float16"]
CASES = [((128, 64), 0, False), ((64, 128), 1, True), ((1000,), None, False), ((7, 9, 11), (0, 2), False)]


def _pair(shape, dtype, seed=0, requires_grad=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    s = shardflow.tensor(x).to(getattr(shardflow, dtype)).requires_grad_(requires_grad)
    return t, s


def _same(s, t):
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(s.detach().float().numpy(), t.detach().float().numpy())


def _nearly_same(s, t, dtype):
    """Equal but for rare one-ulp ties: a float32 dot product summed in another order can
    land on the other side of a rounding boundary (BLAS vs oneDNN)."""
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    a, b = s.detach().float().numpy(), t.detach().float().numpy()
    assert (a == b).mean() >= 0.995, (a == b).mean()
    ulp = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}[dtype]
    np.testing.assert_allclose(a, b, rtol=ulp, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "dim", "keepdim"), CASES)
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_half_sum_mean_round_once_like_torch(name, shape, dim, keepdim, dtype):
    t, s = _pair(shape, dtype)
    if dim is None:
        _same(getattr(s, name)(), getattr(t, name)())
    else:
        _same(getattr(s, name)(dim, keepdim=keepdim), getattr(t, name)(dim, keepdim=keepdim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_half_sum_with_dtype_argument(dtype):
    t, s = _pair((256, 8), dtype)
    _same(s.sum(0, dtype=getattr(shardflow, dtype)), t.sum(0, dtype=getattr(torch, dtype)))
    _same(s.sum(0, dtype=shardflow.float32), t.sum(0, dtype=torch.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_half_linear_bias_and_its_gradient_like_torch(dtype):
    """The output rounds once after the bias is added; the bias gradient is the float32-
    accumulated column sum of the output gradient, rounded once."""
    tx, sx = _pair((96, 24), dtype, seed=0, requires_grad=True)
    tw, sw = _pair((40, 24), dtype, seed=1, requires_grad=True)
    tb, sb = _pair((40,), dtype, seed=2, requires_grad=True)
    tg, sg = _pair((96, 40), dtype, seed=3)
    ty = torch.nn.functional.linear(tx, tw, tb)
    sy = F.linear(sx, sw, sb)
    _nearly_same(sy, ty, dtype)
    ty.backward(tg)
    sy.backward(sg)
    _same(sb.grad, tb.grad)
    np.testing.assert_allclose(sw.grad.float().numpy(), tw.grad.float().numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(sx.grad.float().numpy(), tx.grad.float().numpy(), rtol=1e-2, atol=1e-2)


def test_autocast_linear_bias_gradient_like_torch():
    """Under bfloat16 autocast (float32 parameters): the output and the float32 bias gradient,
    which is the bfloat16 gradient's column sum, as in torch."""
    x = np.random.default_rng(0).standard_normal((3, 64, 32)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((48, 32)).astype(np.float32) * 0.1
    b = np.random.default_rng(2).standard_normal(48).astype(np.float32)
    tl = torch.nn.Linear(32, 48)
    sl = shardflow.nn.Linear(32, 48)
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(w))
        tl.bias.copy_(torch.tensor(b))
    sl.load_state_dict({"weight": shardflow.tensor(w), "bias": shardflow.tensor(b)})
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = tl(torch.tensor(x))
    with shardflow.autocast("cpu", dtype=shardflow.bfloat16):
        sy = sl(shardflow.tensor(x))
    _nearly_same(sy, ty, "bfloat16")
    (ty.float() ** 2).sum().backward()
    (sy.float() ** 2).sum().backward()
    assert sl.bias.grad.dtype == shardflow.float32
    np.testing.assert_array_equal(sl.bias.grad.numpy(), tl.bias.grad.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["var", "std", "logsumexp", "cumsum"])
def test_half_var_std_logsumexp_cumsum_like_torch(name, dtype):
    """Values exactly torch's (float32 accumulation, one rounding); the gradients within a
    2-byte ulp of torch's (cumsum's gradient is a reversed cumsum, accumulated alike)."""
    t, s = _pair((256, 8), dtype, requires_grad=True)
    ty, sy = getattr(t, name)(0), getattr(s, name)(0)
    _same(sy, ty)
    if name in ("var", "std"):
        _same(getattr(s, name)(), getattr(t, name)())
    tg, sg = _pair(tuple(ty.shape), dtype, seed=5)
    ty.backward(tg)
    sy.backward(sg)
    _nearly_same(s.grad, t.grad, dtype)
