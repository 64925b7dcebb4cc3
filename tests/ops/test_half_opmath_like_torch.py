"""float16/bfloat16 (and float32 ``alpha``) arithmetic with PyTorch's bits.

Found running "Build a Large Language Model (From Scratch)"'s Llama 3.2 and Qwen3 MoE in
bfloat16 (``tests/parity/test_public_programs_more_p.py``): PyTorch's CPU kernels compute a
2-byte op in float32 (its opmath type) and round once, and each op has its own rule for a
Python number operand. shardflow rounded differently in up to a third of the elements:

* ``x * s``, ``x / s``, ``s / x``: the number in float32 (``attn_scores / head_dim**0.5``
  divided by 2.828125 in bfloat16);
* ``x + s``, ``x - s``: the number rounded to the tensor's dtype first, then float32;
* ``add``/``sub`` with ``alpha``: one fused multiply-add in float32 (``alpha`` and a number
  ``other`` rounded to a 2-byte dtype first); for float32 too (``p.add_(g, alpha=-lr)``);
* ``silu``: ``x / (1 + exp(-x))`` in float32, and its gradient in PyTorch's order;
* ``scaled_dot_product_attention`` in float16/bfloat16: the flash kernel's order (weights
  rounded before the product with v, rows scaled by 1/sum after it).
"""

import numpy as np
import pytest
import torch

import shardflow

DTYPES = ["bfloat16", "float16"]


def _pair(x, dtype):
    return torch.tensor(x).to(getattr(torch, dtype)), shardflow.tensor(x).to(getattr(shardflow, dtype))


def _same(sf_t, th_t, what, most=0):
    assert str(sf_t.dtype).split(".")[-1] == str(th_t.dtype).split(".")[-1], what
    a, b = sf_t.float().detach().numpy(), th_t.float().detach().numpy()
    differ = int(((a != b) & ~(np.isnan(a) & np.isnan(b))).sum())
    assert differ <= most, f"{what}: {differ} of {a.size} elements differ from torch's"


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 3).astype(np.float32), rng.standard_normal(n).astype(np.float32)


OPS = {
    "mul": lambda a, b: a * 0.1, "rmul": lambda a, b: 0.1 * a, "div": lambda a, b: a / 2.8284271247461903,
    "div_method": lambda a, b: a.div(2.8284271247461903), "rdiv": lambda a, b: 2.8284271247461903 / a,
    "add": lambda a, b: a + 0.1, "radd": lambda a, b: 0.37 + a, "sub": lambda a, b: a - 0.1,
    "rsub": lambda a, b: 0.1 - a, "add_int": lambda a, b: a + 3001, "mul_": lambda a, b: a.clone().mul_(0.1),
    "div_": lambda a, b: a.clone().div_(3.3), "add_": lambda a, b: a.clone().add_(0.37),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_half_tensor_with_a_number_like_torch(dtype, name):
    x, y = _data()
    (ta, sa), (tb, sb) = _pair(x, dtype), _pair(y, dtype)
    _same(OPS[name](sa, sb), OPS[name](ta, tb), f"{dtype} {name}")


@pytest.mark.parametrize("dtype", [*DTYPES, "float32"])
def test_add_sub_alpha_is_one_fused_multiply_add_like_torch(dtype):
    x, y = _data()
    (ta, sa), (tb, sb) = _pair(x, dtype), _pair(y, dtype)
    # a 2-byte result is rounded twice here (float64 -> float32 -> dtype) where PyTorch's FMA
    # rounds float32 once: a handful of the 4000 elements may differ by one unit
    most = 8 if dtype != "float32" else 0
    _same(sa.add(sb, alpha=0.3), ta.add(tb, alpha=0.3), f"{dtype} add alpha", most)
    _same(sa.sub(sb, alpha=0.7), ta.sub(tb, alpha=0.7), f"{dtype} sub alpha", most)
    _same(sa.clone().add_(sb, alpha=-0.01), ta.clone().add_(tb, alpha=-0.01), f"{dtype} add_ alpha", most)
    _same(sa.add(0.7, alpha=0.3), ta.add(0.7, alpha=0.3), f"{dtype} number alpha", most)


@pytest.mark.parametrize("dtype", [*DTYPES, "float32"])
def test_number_ops_gradients_like_torch(dtype):
    x, g = _data(seed=1)
    ta, sa = (t.requires_grad_() for t in _pair(x, dtype))
    for lib, v in ((torch, ta), (shardflow, sa)):
        out = (v * 0.1) / 2.8284271247461903 + v.add(v, alpha=0.3) - v.sub(v * 2, alpha=0.7) + 0.37
        out.backward(lib.tensor(g).to(v.dtype))
    _same(sa.grad, ta.grad, f"{dtype} gradient")


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_half_like_torch(dtype):
    x, g = _data(seed=2)
    x[:3] = [-100.0, 100.0, 0.0]
    ta, sa = (t.requires_grad_() for t in _pair(x, dtype))
    th_y, sf_y = torch.nn.functional.silu(ta), shardflow.nn.functional.silu(sa)
    # float16's float32 exp differs from PyTorch's (SLEEF) by an ulp now and then
    most = 0 if dtype == "bfloat16" else 10
    _same(sf_y, th_y, f"{dtype} silu", most)
    th_y.backward(torch.tensor(g).to(ta.dtype))
    sf_y.backward(shardflow.tensor(g).to(sa.dtype))
    _same(sa.grad, ta.grad, f"{dtype} silu gradient", most + 2)
    _same(shardflow.nn.SiLU()(sa), torch.nn.SiLU()(ta), f"{dtype} nn.SiLU", most)


def test_silu_float32_order_like_torch():
    """float32: ``x / (1 + exp(-x))`` as PyTorch (``x * sigmoid(x)`` rounds twice); what
    still differs comes from the two libraries' float32 ``exp`` (within an ulp)."""
    x, _ = _data(20000, seed=3)
    t, s = torch.tensor(x), shardflow.tensor(x)
    a, b = torch.nn.functional.silu(t).numpy(), shardflow.nn.functional.silu(s).numpy()
    np.testing.assert_allclose(b, a, rtol=3e-7, atol=1e-30)
    assert (a != b).mean() < 0.3  # x * sigmoid(x) differed in 39% of these


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "gqa"])
def test_sdpa_half_like_torch(dtype, case):
    rng = np.random.default_rng(4)
    L = 12
    q, k, v = (rng.standard_normal((2, 4, L, 8)).astype(np.float32) for _ in range(3))
    (tq, sq), (tk, sk), (tv, sv) = _pair(q, dtype), _pair(k, dtype), _pair(v, dtype)
    kwargs_t, kwargs_s = {}, {}
    if case == "causal":
        kwargs_t = kwargs_s = {"is_causal": True}
    elif case == "bool_mask":
        m = rng.random((L, L)) > 0.3
        np.fill_diagonal(m, True)
        kwargs_t, kwargs_s = {"attn_mask": torch.tensor(m)}, {"attn_mask": shardflow.tensor(m)}
    elif case == "float_mask":
        tm, sm = _pair(rng.standard_normal((L, L)).astype(np.float32), dtype)
        kwargs_t, kwargs_s = {"attn_mask": tm}, {"attn_mask": sm}
    elif case == "gqa":
        tk, sk, tv, sv = tk[:, :2], sk[:, :2], tv[:, :2], sv[:, :2]
        kwargs_t = kwargs_s = {"enable_gqa": True, "is_causal": True}
    th = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **kwargs_t)
    sf = shardflow.nn.functional.scaled_dot_product_attention(sq, sk, sv, **kwargs_s)
    # float16's 11 bits show an ulp of the float32 exp (NumPy's vs PyTorch's SLEEF) now and then
    _same(sf, th, f"{dtype} sdpa {case}", 0 if dtype == "bfloat16" else 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 1])
def test_softmax_half_backward_reads_the_returned_output_like_torch(dtype, dim):
    """PyTorch's softmax backward reads the output as returned (rounded to the 2-byte dtype)
    and computes ``y * (g - sum(g y))`` in float32: with the unrounded float32 probabilities
    a third of bfloat16 input gradients were an ulp off (the Llama 3.2 test's attention)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 11, 32)).astype(np.float32)
    g = rng.standard_normal((4, 11, 32)).astype(np.float32)
    (tx, sx), (tg, sg) = _pair(x, dtype), _pair(g, dtype)
    tx.requires_grad_()
    sx.requires_grad_()
    th_y, sf_y = torch.softmax(tx, dim), shardflow.softmax(sx, dim)
    _same(sf_y, th_y, f"{dtype} softmax")
    th_y.backward(tg)
    sf_y.backward(sg)
    # rows across dim 1 sum in another order than torch's (its strided reduction): an ulp in a few
    _same(sx.grad, tx.grad, f"{dtype} softmax gradient", 0 if dim == -1 else 40)


@pytest.mark.parametrize("op", ["matmul", "mm", "folded", "linear", "linear_bias", "bmm_broadcast"])
def test_matmul_linear_bfloat16_gradients_flow_in_bfloat16_like_torch(op):
    """A bfloat16 GEMM comes back float32 from NumPy; the backward of matmul/linear passed
    that float32 gradient on, so every node above a Linear computed with unrounded values
    (torch's engine casts each gradient to its input's dtype). Now the gradient that reaches
    the next node is bfloat16 and equal to torch's."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    fns = {
        "matmul": lambda lib, a: a @ a.transpose(-1, -2),
        "mm": lambda lib, a: a[0, 0] @ a[0, 1].T,
        "folded": lambda lib, a: a @ a[0, 0].T,
        "linear": lambda lib, a: lib.nn.functional.linear(a, a[0, 0]),
        "linear_bias": lambda lib, a: lib.nn.functional.linear(a, a[0, 0], a[0, 0, 0, :4]),
        "bmm_broadcast": lambda lib, a: a @ a[0].transpose(-1, -2),
    }
    got = {}
    for lib in (torch, shardflow):
        a = lib.tensor(x).bfloat16().requires_grad_()
        a2 = a * 1  # the gradient reaching this node is what the matmul's backward sent
        a2.register_hook(lambda g, lib=lib: got.__setitem__(lib.__name__, g))
        fns[op](lib, a2).float().pow(2).sum().backward()
    _same(got["shardflow"], got["torch"], f"{op} gradient")
