"""The create_graph=True engine pass (autograd/higher_order.py): gradients that carry a
graph, hooks, inputs=, retain_graph, allow_unused/materialize_grads, NoDoubleBackward."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(1)
X = R.random((3, 4)) + 0.5
Y = R.random(4) + 0.5


ARITH_SPECS = {
    "add_sub_neg": lambda m, x, y: ((x + y) * (x - y) + (-x) * y + m.add(x, y, alpha=2.0) * x).sum(),
    "mul_div": lambda m, x, y: ((x * y) / (y + x) - x * x * 3).sum(),
    "scalar_div": lambda m, x, y: (2.0 / x + x / 3.0 + 1.0 - x).sum() * y.sum(),
    "sum_mean": lambda m, x, y: (x.sum(0) * y).sum() * x.mean() + (x.sum(1, keepdim=True) * x).sum(),
    "reciprocal": lambda m, x, y: (m.reciprocal(x) * y).sum(),
}


@pytest.mark.parametrize("name", list(ARITH_SPECS))
def test_double_backward_matches_torch_and_finite_differences(name):
    check_double_backward(ARITH_SPECS[name], [X, Y])


def test_create_graph_gradient_carries_graph_and_third_order():
    for m in (sf, torch):
        x = m.tensor([0.5, 1.5, 2.0], dtype=m.float64, requires_grad=True)
        y = (x * x * x).sum()
        g, = m.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad and g.grad_fn is not None
        h, = m.autograd.grad(g.sum(), x, create_graph=True)
        t, = m.autograd.grad(h.sum(), x)
        if m is sf:
            res = (g.detach().numpy(), h.detach().numpy(), t.numpy())
        else:
            ref = (g.detach().numpy(), h.detach().numpy(), t.numpy())
    for a, b in zip(res, ref):
        np.testing.assert_allclose(a, b)


def test_backward_create_graph_sets_grad_with_graph_then_accumulates():
    out = []
    for m in (sf, torch):
        x = m.tensor(X, requires_grad=True)
        (x * x).sum().backward(create_graph=True)
        assert x.grad.requires_grad
        g1 = x.grad
        (x * x * x).sum().backward(create_graph=True)  # out of place: g1 is unchanged
        gg = x.grad
        x.grad = None
        gg.sum().backward()
        out.append((g1.detach().numpy(), gg.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b)


def test_grad_outputs_that_require_grad_join_the_graph():
    out = []
    for m in (sf, torch):
        x = m.tensor(X, requires_grad=True)
        v = m.tensor(np.ones_like(X) * 2, requires_grad=True)
        g, = m.autograd.grad(x * x, x, grad_outputs=v, create_graph=True)
        g.sum().backward()
        out.append((x.grad.numpy(), v.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b)


def test_hooks_see_tensors_and_may_replace_them():
    out = []
    for m in (sf, torch):
        seen = []
        posted = []
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        y.register_hook(lambda g: seen.append(type(g)) or g * 3.0)
        x.register_hook(lambda g: g + 1.0)
        x.register_post_accumulate_grad_hook(lambda t: posted.append(t.grad.requires_grad))
        (y * y * y).sum().backward(create_graph=True)
        assert seen == [m.Tensor] and posted == [True]
        g = x.grad
        x.grad = None
        (g * g).sum().backward()
        out.append((g.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b)


def test_inputs_allow_unused_materialize_grads_and_retain_graph():
    x = sf.tensor(X, requires_grad=True)
    z = sf.tensor(Y, requires_grad=True)
    y = (x * x).sum()
    y.backward(create_graph=True, inputs=[x])
    assert z.grad is None and x.grad.requires_grad
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        sf.autograd.grad((x * x).sum(), [x, z], create_graph=True)
    gx, gz = sf.autograd.grad((x * x).sum(), [x, z], create_graph=True, allow_unused=True)
    assert gz is None
    gx, gz = sf.autograd.grad((x * x).sum(), [x, z], create_graph=True, materialize_grads=True)
    np.testing.assert_array_equal(gz.numpy(), np.zeros_like(Y))
    # retain_graph defaults to create_graph: a second backward through the graph works ...
    w = (x * x).sum()
    sf.autograd.grad(w, x, create_graph=True)
    sf.autograd.grad(w, x)
    # ... and retain_graph=False frees it
    w = (x * x).sum()
    sf.autograd.grad(w, x, create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="second time"):
        sf.autograd.grad(w, x)


def test_grad_of_intermediate_captures_tensor():
    for m in (sf, torch):
        x = m.tensor(X, requires_grad=True)
        h = x * x
        g, = m.autograd.grad((h * h).sum(), h, create_graph=True)
        (g.sum()).backward()
        if m is sf:
            got = x.grad.numpy()
        else:
            np.testing.assert_allclose(got, x.grad.numpy())


class _Cube(sf.autograd.Function):
    """An op with only an array backward (no backward_graph)."""

    def forward(self, a):
        self.x = a
        return a ** 3

    def backward(self, g):
        return 3 * g * self.x ** 2


def test_op_without_backward_graph_gives_first_order_and_fails_loudly_after():
    x = sf.tensor(X, requires_grad=True)
    g, = sf.autograd.grad(_Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * X ** 2)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match=r"second derivative of _Cube \(create_graph=True\) is not implemented"):
        g.sum().backward()


def test_saved_input_keeps_history_and_saved_output_links_node():
    x = sf.tensor(X, requires_grad=True)
    h = x * 2.0
    y = h * h
    node = y.grad_fn
    a = node.saved_input(0)
    assert a.grad_fn is h.grad_fn and a._output_nr == 0
    np.testing.assert_array_equal(a.numpy(), h.detach().numpy())
    assert node.saved_input(0, h.array).grad_fn is h.grad_fn
    leaf_mul = (x * h).grad_fn
    assert leaf_mul.saved_input(0) is x
    assert (x * 3.0).grad_fn.saved_input(1) == 3.0  # a number stays a number
    out = node.saved_output(0, y.array)
    assert out.grad_fn is node and out.requires_grad


def test_first_order_results_unchanged_by_create_graph():
    x = sf.tensor(X, requires_grad=True)
    f = lambda: ((x * x) / (x + 1.0)).sum() * 2.0 - x.mean()  # noqa: E731
    g1, = sf.autograd.grad(f(), x)
    g2, = sf.autograd.grad(f(), x, create_graph=True)
    np.testing.assert_allclose(g2.detach().numpy(), g1.numpy(), rtol=0, atol=0)
