"""``grad_fn.name()`` and ``repr(grad_fn)`` give torch's node names (``autograd/node_names.py``),
compared with torch 2.13 op by op."""

import re

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
W = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
IMG = np.random.default_rng(2).standard_normal((2, 3, 4, 4)).astype(np.float32)
KER = np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(np.float32)

PROGRAMS = {
    "add": lambda m, x, w: x + x,
    "sub": lambda m, x, w: x - 1,
    "mul": lambda m, x, w: x * x,
    "neg": lambda m, x, w: -x,
    "pow": lambda m, x, w: x ** 3,
    "square": lambda m, x, w: x.square(),
    "exp": lambda m, x, w: x.exp(),
    "log": lambda m, x, w: x.abs().log(),
    "tanh": lambda m, x, w: x.tanh(),
    "sigmoid": lambda m, x, w: x.sigmoid(),
    "relu": lambda m, x, w: m.relu(x),
    "gelu": lambda m, x, w: m.nn.functional.gelu(x),
    "silu": lambda m, x, w: m.nn.functional.silu(x),
    "softmax": lambda m, x, w: x.softmax(-1),
    "log_softmax": lambda m, x, w: x.log_softmax(-1),
    "sum": lambda m, x, w: x.sum(),
    "sum_dim": lambda m, x, w: x.sum(0),
    "mean": lambda m, x, w: x.mean(),
    "mean_dim": lambda m, x, w: x.mean(1),
    "matmul": lambda m, x, w: x @ w.T,
    "linear": lambda m, x, w: m.nn.functional.linear(x, w),
    "linear_bias": lambda m, x, w: m.nn.functional.linear(x, w, w[:, 0]),
    "view": lambda m, x, w: x.view(24),
    "t": lambda m, x, w: x.t(),
    "transpose": lambda m, x, w: x.unsqueeze(0).transpose(1, 2),
    "permute": lambda m, x, w: x.unsqueeze(0).permute(2, 0, 1),
    "select": lambda m, x, w: x[1],
    "slice": lambda m, x, w: x[1:3],
    "index": lambda m, x, w: x[[0, 2]],
    "cat": lambda m, x, w: m.cat([x, x]),
    "stack": lambda m, x, w: m.stack([x, x]),
    "expand": lambda m, x, w: x[:1].expand(3, 6),
    "clone": lambda m, x, w: x.clone(),
    "max": lambda m, x, w: x.max(),
    "min": lambda m, x, w: x.min(),
    "max_dim": lambda m, x, w: x.max(1)[0],
    "norm": lambda m, x, w: x.norm(),
    "mse": lambda m, x, w: m.nn.functional.mse_loss(x, x.detach() * 2),
    "l1": lambda m, x, w: m.nn.functional.l1_loss(x, x.detach() * 2),
    "cross_entropy": lambda m, x, w: m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2, 3])),
    "layer_norm": lambda m, x, w: m.nn.functional.layer_norm(x, (6,)),
    "conv2d": lambda m, x, w: m.nn.functional.conv2d(m.tensor(IMG, requires_grad=True), m.tensor(KER)),
    "max_pool2d": lambda m, x, w: m.nn.functional.max_pool2d(m.tensor(IMG, requires_grad=True), 2),
    "avg_pool2d": lambda m, x, w: m.nn.functional.avg_pool2d(m.tensor(IMG, requires_grad=True), 2),
    "batch_norm": lambda m, x, w: m.nn.functional.batch_norm(x, None, None, training=True),
    "embedding": lambda m, x, w: m.nn.functional.embedding(m.tensor([0, 2]), w),
    "where": lambda m, x, w: m.where(x > 0, x, w[:4]),
    "clamp": lambda m, x, w: x.clamp(-1, 1),
    "split": lambda m, x, w: x.split(2)[0],
    "bmm": lambda m, x, w: m.bmm(x.unsqueeze(0), w.t().unsqueeze(0)),
    "var": lambda m, x, w: x.var(),
    "std": lambda m, x, w: x.std(),
    "logsumexp": lambda m, x, w: x.logsumexp(1),
    "bce_logits": lambda m, x, w: m.nn.functional.binary_cross_entropy_with_logits(x, x.detach().sigmoid()),
    "gather": lambda m, x, w: x.gather(1, m.tensor([[0], [1], [2], [3]])),
    "masked_fill": lambda m, x, w: x.masked_fill(x > 0, 0.0),
    "to_dtype": lambda m, x, w: x.to(m.float64),
}


def _node(lib, program):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    return program(lib, x, w).grad_fn


@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_node_name_is_torchs(op):
    assert _node(sf, PROGRAMS[op]).name() == _node(torch, PROGRAMS[op]).name()


def test_repr_and_tensor_repr_like_torch():
    y = sf.tensor(X, requires_grad=True) * 2
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert repr(y).endswith("grad_fn=<MulBackward0>)")
    # next_functions walks keep torch's names too
    z = (y.exp() + 1).sum()
    assert [n.name() for n, _ in z.grad_fn.next_functions] == ["AddBackward0"]


def test_a_programs_own_function_keeps_its_class_name():
    class Twice(sf.autograd.Function):
        def forward(self, a):
            return a * 2

        def backward(self, g):
            return g * 2

    y = Twice.apply(sf.tensor(X, requires_grad=True))
    assert y.grad_fn.name() == "Twice"
