"""backward_graph of the shape, index and conversion ops (ops/shape.py, index.py,
conversion.py): ``sum(op(x) ** 3)`` differentiated twice (the cube makes the gradient go
through the op's backward_graph and the op again), against torch 2.13 and finite differences."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(5)
X = R.standard_normal((3, 4))
X3 = R.standard_normal((2, 3, 4))
Y = R.standard_normal((3, 4))
ROW = R.standard_normal((1, 4))


def _idx(m, values):
    return m.tensor(np.asarray(values), dtype=m.int64)


SPECS = {  # name: (op(m, x), input)
    "reshape": (lambda m, x: x.reshape(4, 3), X),
    "view": (lambda m, x: x.view(-1), X),
    "transpose": (lambda m, x: x.transpose(0, 1), X),
    "T": (lambda m, x: x.T, X),
    "permute": (lambda m, x: x.permute(2, 0, 1), X3),
    "expand": (lambda m, x: x.expand(3, 4), ROW),
    "broadcast_to": (lambda m, x: m.broadcast_to(x, (2, 3, 4)), ROW),
    "repeat": (lambda m, x: x.repeat(2, 1), X),
    "squeeze_unsqueeze": (lambda m, x: x.unsqueeze(1).squeeze(1), X),
    "flatten": (lambda m, x: x.flatten(), X3),
    "cat": (lambda m, x: m.cat([x, x * 2.0, x[:1]], 0), X),
    "stack": (lambda m, x: m.stack([x, x.sin()], 1), X),
    "split": (lambda m, x: m.split(x, [1, 3], 1)[1] * 2.0 + m.split(x, [1, 3], 1)[0], X),
    "chunk": (lambda m, x: x.chunk(2, 1)[0] * x.chunk(2, 1)[1], X),
    "unbind": (lambda m, x: x.unbind(0)[0] * x.unbind(0)[2], X),
    "slice": (lambda m, x: x[1:, ::2], X),
    "getitem_int": (lambda m, x: x[1], X3),
    "getitem_adv": (lambda m, x: x[_idx(m, [0, 2, 0])], X),
    "getitem_mask": (lambda m, x: x[x > 0], X),
    "index_select": (lambda m, x: m.index_select(x, 1, _idx(m, [3, 0, 3])), X),
    "gather": (lambda m, x: m.gather(x, 1, _idx(m, [[0, 0], [1, 3], [2, 2]])), X),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, _idx(m, [[0], [3], [1]]), 1), X),
    "masked_select": (lambda m, x: m.masked_select(x, x > 0.2), X),
    "masked_fill": (lambda m, x: x.masked_fill(x > 0.5, 1.5), X),
    "index_fill": (lambda m, x: x.index_fill(1, _idx(m, [0, 2]), -1.0), X),
    "flip": (lambda m, x: x.flip(0, 1), X),
    "roll": (lambda m, x: x.roll(1, 1), X),
    "tril": (lambda m, x: x.tril(), X),
    "triu": (lambda m, x: x.triu(1), X),
    "diagonal": (lambda m, x: x.diagonal(), X),
    "unfold": (lambda m, x: x.unfold(1, 2, 1), X),
    "pad_constant": (lambda m, x: m.nn.functional.pad(x, (1, 2), value=0.5), X),
    "pad_reflect": (lambda m, x: m.nn.functional.pad(x.unsqueeze(0), (2, 1), mode="reflect"), X),
    "pad_replicate": (lambda m, x: m.nn.functional.pad(x.unsqueeze(0), (1, 2), mode="replicate"), X),
    "pad_circular": (lambda m, x: m.nn.functional.pad(x.unsqueeze(0), (1, 2), mode="circular"), X),
    "clone": (lambda m, x: x.clone(), X),
    "to_float32_and_back": (lambda m, x: x.float().double(), X),
    "embedding": (lambda m, w: m.nn.functional.embedding(_idx(m, [[0, 2], [2, 1]]), w), X),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_shape_index_double_backward(name):
    op, x = SPECS[name]
    lossy = name == "to_float32_and_back"  # float32 rounding: torch only, looser
    check_double_backward(lambda m, x: (op(m, x) ** 3).sum(), [x], rtol=1e-4 if lossy else 1e-5,
                          atol=1e-5 if lossy else 1e-7, fd=not lossy)


def test_two_input_index_ops_double_backward():
    f = lambda m, x, y: ((x.index_add(0, _idx(m, [2, 0]), y[:2], alpha=0.5) ** 3).sum()  # noqa: E731
                         + (m.where(x > 0, y, x).masked_fill(y > 1.0, m.tensor(0.25, dtype=m.float64)
                                                             if m is torch else 0.25) ** 3).sum())
    check_double_backward(f, [X, Y], rtol=1e-5, atol=1e-7)


def test_masked_fill_tensor_value_double_backward():
    f = lambda m, x, v: (x.masked_fill(x > 0.3, v) ** 3).sum() * v  # noqa: E731
    check_double_backward(f, [X, np.array(0.7)])


def test_copy_into_tensor_double_backward():
    def f(m, x, y):
        z = y * 1.0
        z.copy_(x ** 2)
        return (z ** 2).sum() + (y ** 3).sum()
    check_double_backward(f, [X, Y])


def test_index_put_value_gradient_gives_first_order_then_raises():
    x = sf.tensor(X, requires_grad=True)
    v = sf.tensor(np.ones(4), requires_grad=True)
    z = x * 1.0
    z[1] = v * x[0]
    g = sf.autograd.grad((z ** 2).sum(), [x, v], create_graph=True)
    tx, tv = torch.tensor(X, requires_grad=True), torch.tensor(np.ones(4), requires_grad=True)
    tz = tx * 1.0
    tz[1] = tv * tx[0]
    tg = torch.autograd.grad((tz ** 2).sum(), [tx, tv], create_graph=True)
    for a, b in zip(g, tg):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
