"""backward_graph of the products (ops/matmul.py): gradient of the gradient against torch
2.13 and finite differences (float64)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(4)
A = R.standard_normal((2, 3))
B = R.standard_normal((3, 2))
A3 = R.standard_normal((2, 2, 3))
B3 = R.standard_normal((2, 3, 2))
V = R.standard_normal(3)
W = R.standard_normal((2, 3))
BIAS = R.standard_normal(2)

SPECS = {
    "mm": (lambda m, a, b: ((a @ b).tanh() * (a @ b)).sum(), [A, B]),
    "mm_square_same": (lambda m, a, b: (a @ a.T @ a).sum() * b.sum(), [A, B]),
    "folded": (lambda m, a, b: ((a @ b) ** 2).sum(), [A3, B]),
    "bmm": (lambda m, a, b: (m.bmm(a, b) ** 2).sum(), [A3, B3]),
    "matvec": (lambda m, a, v: ((a @ v) ** 3).sum(), [A, V]),
    "vecmat": (lambda m, v, b: ((v @ b) ** 3).sum(), [V, B]),
    "batched_bcast": (lambda m, a, b: ((a @ b.unsqueeze(0)) ** 2).sum(), [A3, B3[0]]),
    "linear": (lambda m, x, w, b: (m.nn.functional.linear(x, w, b).tanh() * x.sum()).sum(), [A3, W, BIAS]),
    "linear_nobias": (lambda m, x, w: (m.nn.functional.linear(x, w) ** 2).sum(), [A, W]),
    "addmm": (lambda m, c, a, b: (m.addmm(c, a, b, beta=0.5, alpha=2.0) ** 2).sum(), [A @ B, A, B]),
    "outer": (lambda m, u, v: (m.outer(u, v) ** 2).sum(), [V, V * 2]),
    "einsum": (lambda m, a, b: (m.einsum("ij,jk->ik", a, b) ** 2).sum(), [A, B]),
    "einsum_batch_sum": (lambda m, a, b: (m.einsum("bij,bjk->b", a, b) ** 2).sum(), [A3, B3]),
    "einsum_bcast_free": (lambda m, a, v: (m.einsum("ij,k->ik", a, v) ** 2).sum(), [A, V]),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_matmul_double_backward(name):
    f, arrays = SPECS[name]
    check_double_backward(f, arrays)


def test_einsum_diagonal_gives_first_order_then_raises():
    x = sf.tensor(R.standard_normal((3, 3)), requires_grad=True)
    g, = sf.autograd.grad((sf.einsum("ii->i", x) ** 2).sum(), x, create_graph=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tg, = torch.autograd.grad((torch.einsum("ii->i", tx) ** 2).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    with pytest.raises(RuntimeError, match="second derivative of EinsumBackward0"):
        g.sum().backward()
