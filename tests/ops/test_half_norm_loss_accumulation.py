"""float16/bfloat16 norms, cumprod and loss reductions against PyTorch 2.13 CPU, which
upcasts each element and accumulates in float32, rounding once (tests/ops/
test_half_accumulation.py covers sum/mean/var/cumsum). Found by nanochat's Muon
(``X / X.norm(dim=(-2, -1), keepdim=True)`` of a bfloat16 gradient: shardflow's norm added
bfloat16 squares in bfloat16 and came out 34% low, so every Newton-Schulz step started from
another matrix; tests/parity/test_public_programs_more_aj.py)."""

import numpy as np
import pytest
import torch

import shardflow
import shardflow.nn.functional as F

DTYPES = ["bfloat16", "float16"]


def _pair(x, dtype, requires_grad=False):
    t = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    s = shardflow.tensor(x).to(getattr(shardflow, dtype)).requires_grad_(requires_grad)
    return t, s


def _same(s, t):
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(s.detach().float().numpy(), t.detach().float().numpy())


def _small(shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.01).astype(np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("p", "dim"), [(2, None), (2, (-2, -1)), (2, 1), (1, 1), (3, 0), ("fro", None),
                                        (float("inf"), 1)])
def test_half_norm_accumulates_in_float32_like_torch(p, dim, dtype):
    t, s = _pair(_small((32, 128)), dtype, requires_grad=True)
    out_t = t.norm(p=p, dim=dim, keepdim=dim is not None)
    out_s = s.norm(p=p, dim=dim, keepdim=dim is not None)
    _same(out_s, out_t)
    g = np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(np.float32)
    out_t.backward(torch.tensor(g).to(out_t.dtype))
    out_s.backward(shardflow.tensor(g).to(out_s.dtype))
    _same(s.grad, t.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_half_vector_and_matrix_norm_like_torch(dtype):
    t, s = _pair(_small((4, 16, 64)), dtype)
    _same(shardflow.linalg.vector_norm(s, dim=-1), torch.linalg.vector_norm(t, dim=-1))
    _same(shardflow.linalg.matrix_norm(s), torch.linalg.matrix_norm(t))
    _same(shardflow.dist(s[0], s[1]), torch.dist(t[0], t[1]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_half_cumprod_keeps_a_float32_running_product_like_torch(dtype):
    x = (np.random.default_rng(2).standard_normal((8, 256)) * 0.05 + 1).astype(np.float32)
    t, s = _pair(x, dtype, requires_grad=True)
    _same(s.cumprod(1), t.cumprod(1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss"])
def test_half_pointwise_loss_reductions_like_torch(name, reduction, dtype):
    x = _small((64, 64), seed=3) * 5
    (t, s), (tt, st) = _pair(x, dtype), _pair(x[::-1].copy(), dtype)
    _same(getattr(F, name)(s, st, reduction=reduction), getattr(torch.nn.functional, name)(t, tt, reduction=reduction))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_half_kl_div_rounds_each_step_like_torch(reduction, dtype):
    """``xlogy(t, t) - t * x``, each op rounded to the 2-byte dtype as torch's: a Python
    ``1.0`` filled beside a bfloat16 array had made the formula float64, rounded once."""
    x = _small((16, 256), seed=4) * 5
    tx = torch.log_softmax(torch.tensor(x).to(getattr(torch, dtype)), -1)
    tt = torch.softmax(torch.tensor(x[::-1].copy()).to(getattr(torch, dtype)), -1)
    sx = shardflow.tensor(tx.float().numpy()).to(getattr(shardflow, dtype))
    st = shardflow.tensor(tt.float().numpy()).to(getattr(shardflow, dtype))
    _same(F.kl_div(sx, st, reduction=reduction), torch.nn.functional.kl_div(tx, tt, reduction=reduction))


@pytest.mark.parametrize("dtype", [*DTYPES, "float32"])
@pytest.mark.parametrize("d", [1, 2])
def test_global_adaptive_avg_pool_like_torch(d, dtype):
    """Output size 1 (global average pooling): 2-byte inputs summed and divided in float32,
    rounded once (was summed in the 2-byte dtype: every bfloat16 output an ulp or more off);
    the gradient ``grad / count`` divided as torch (was ``grad * (1 / count)``, an ulp off
    for a count of 72 in any dtype). float32 forwards are compared to torch's rounding (its
    mean sums in another order)."""
    x = np.random.default_rng(5).standard_normal((2, 16, 8, 9)).astype(np.float32) * 0.05
    x = x.reshape(2, 16, 72) if d == 1 else x
    t, s = _pair(x, dtype, requires_grad=True)
    out_t = getattr(torch.nn.functional, f"adaptive_avg_pool{d}d")(t, 1)
    out_s = getattr(F, f"adaptive_avg_pool{d}d")(s, 1)
    if dtype == "float32":
        np.testing.assert_allclose(out_s.detach().numpy(), out_t.detach().numpy(), rtol=1e-6, atol=1e-8)
    else:
        _same(out_s, out_t)
    g = np.random.default_rng(6).standard_normal(tuple(out_t.shape)).astype(np.float32)
    out_t.backward(torch.tensor(g).to(out_t.dtype))
    out_s.backward(shardflow.tensor(g).to(out_s.dtype))
    _same(s.grad, t.grad)
