"""backward_graph of the reductions (ops/reduce.py): gradient of the gradient against torch
2.13 and finite differences (float64)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(3)
X = R.standard_normal((3, 4))
POS = R.random((3, 4)) + 0.5
ZERO = POS.copy()
ZERO[1, 2] = 0.0

SPECS = {
    "sum_dim": (lambda m, x: (x.sum(1) ** 2).sum(), X),
    "mean_keep": (lambda m, x: (x.mean(0, keepdim=True) * x).sum(), X),
    "prod_all": (lambda m, x: x.prod() * x.sum(), POS),
    "prod_dim": (lambda m, x: (x.prod(1) * x.sum(1)).sum(), POS),
    "amax": (lambda m, x: (m.amax(x, 1) * x.sum(1)).sum(), X),
    "amin_all": (lambda m, x: m.amin(x) * x.sum(), X),
    "max_dim": (lambda m, x: (m.max(x, 1).values * x.sum(1)).sum(), X),
    "min_dim_keep": (lambda m, x: (m.min(x, 0, keepdim=True).values * x).sum(), X),
    "max_all": (lambda m, x: m.max(x) * x.sum(), X),
    "var": (lambda m, x: (x.var(1) * x.sum(1)).sum(), X),
    "var_all": (lambda m, x: x.var() * x.sum(), X),
    "std": (lambda m, x: (x.std(0, keepdim=True) * x).sum(), X),
    "std_unbiased_false": (lambda m, x: x.std(1, unbiased=False).sum() ** 2, X),
    "logsumexp": (lambda m, x: (m.logsumexp(x, 1) ** 2).sum(), X),
    "cumsum": (lambda m, x: (x.cumsum(1) ** 2).sum(), X),
    "cumprod": (lambda m, x: (x.cumprod(1) * x).sum(), POS),
    "norm2": (lambda m, x: (m.linalg.vector_norm(x, 2, 1) ** 3).sum(), X),
    "norm1": (lambda m, x: m.linalg.vector_norm(x, 1) * x.sum(), X),
    "norm3": (lambda m, x: (m.linalg.vector_norm(x, 3, 0) * x.sum(0)).sum(), X),
    "norm_inf": (lambda m, x: m.linalg.vector_norm(x, float("inf")) * x.sum(), X),
    "norm_fro": (lambda m, x: m.norm(x) ** 3, X),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_reduce_double_backward(name):
    f, x = SPECS[name]
    check_double_backward(f, [x])


@pytest.mark.parametrize("op", ["prod", "cumprod"])
def test_zero_in_product_gives_first_order_then_raises(op):
    x = sf.tensor(ZERO, requires_grad=True)
    y = x.prod() if op == "prod" else x.cumprod(1).sum()
    tx = torch.tensor(ZERO, requires_grad=True)
    ty = tx.prod() if op == "prod" else tx.cumprod(1).sum()
    g, = sf.autograd.grad(y, x, create_graph=True)
    tg, = torch.autograd.grad(ty, tx, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    with pytest.raises(RuntimeError, match="second derivative of (Prod|CumProd)"):
        g.sum().backward()


EXTRA = {
    "cummax": (lambda m, x: (m.cummax(x, 1).values ** 3).sum(), X),
    "cummin": (lambda m, x: (m.cummin(x, 0).values ** 3).sum(), X),
    "logcumsumexp": (lambda m, x: (m.logcumsumexp(x, 1) ** 2).sum(), X),
    "acosh": (lambda m, x: (m.acosh(x + 1.0) * x).sum(), POS),
    "asinh": (lambda m, x: (m.asinh(x) * x).sum(), X),
    "atanh": (lambda m, x: (m.atanh(x * 0.5) * x).sum(), POS - 0.5),
    "deg2rad": (lambda m, x: (m.deg2rad(x) ** 3).sum(), X),
    "logit": (lambda m, x: (m.logit(x * 0.5) * x).sum(), POS),
    "logit_eps": (lambda m, x: (m.logit(x - 0.4, eps=0.2) * x).sum(), POS),
}


@pytest.mark.parametrize("name", list(EXTRA))
def test_extra_double_backward(name):
    f, x = EXTRA[name]
    check_double_backward(f, [x])


BINARY_EXTRA = ["atan2", "hypot", "logaddexp", "logaddexp2", "copysign"]


@pytest.mark.parametrize("name", BINARY_EXTRA)
def test_math_extra_binary_double_backward(name):
    f = lambda m, a, b: (getattr(m, name)(a, b) * a * b).sum()  # noqa: E731
    check_double_backward(f, [X, POS])
