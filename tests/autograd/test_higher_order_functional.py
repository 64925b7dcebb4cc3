"""Users of the create_graph engine: ``autograd.functional`` (exact hessian/hvp/vhp by double
backward; create_graph=True for all six), ``gradgradcheck``, ``Tensor.backward(create_graph)``
and ``torch.func.grad`` nested, against torch 2.13."""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd.higher_order import DoubleBackwardNotImplemented

SF, TF = sf.autograd.functional, torch.autograd.functional
R = np.random.default_rng(6)
X = R.standard_normal(3)
Y = R.standard_normal(3)
V = R.standard_normal(3)


def f_scalar(x, y):
    return ((x * y).exp() + x.tanh() * y ** 2).sum()


def f_vector(x, y):
    return (x * y).sin() + x ** 3


def _np(t):
    if isinstance(t, tuple):
        return [_np(u) for u in t]
    return t.detach().numpy()


def _assert_tree(a, b, rtol=1e-12, atol=1e-13):
    if isinstance(a, list):
        for u, v in zip(a, b):
            _assert_tree(u, v, rtol, atol)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["hessian", "hvp", "vhp"])
def test_second_order_is_exact(name):
    """Double backward agrees with torch to rounding (finite differences would be ~1e-9)."""
    scale = 3.0  # large third derivatives: a difference quotient is visibly off
    f = lambda x, y: ((x * scale).exp() * y).sum()  # noqa: E731
    args = {"hessian": (), "hvp": ((sf.tensor(V), sf.tensor(V)),), "vhp": ((sf.tensor(V), sf.tensor(V)),)}
    targs = {"hessian": (), "hvp": ((torch.tensor(V), torch.tensor(V)),),
             "vhp": ((torch.tensor(V), torch.tensor(V)),)}
    got = getattr(SF, name)(f, (sf.tensor(X), sf.tensor(Y)), *args[name])
    want = getattr(TF, name)(f, (torch.tensor(X), torch.tensor(Y)), *targs[name])
    _assert_tree(_np(got), _np(want), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["vjp", "jacobian", "jvp", "hessian", "hvp", "vhp"])
def test_create_graph_results_are_differentiable(name):
    """With create_graph=True the results carry a graph back to the caller's inputs."""
    res = []
    for m, F in ((sf, SF), (torch, TF)):
        x = m.tensor(X, requires_grad=True)
        y = m.tensor(Y, requires_grad=True)
        v = m.tensor(V)
        if name == "vjp":
            out = F.vjp(f_vector, (x, y), v, create_graph=True)[1]
        elif name == "jacobian":
            out = F.jacobian(f_vector, (x, y), create_graph=True)
        elif name == "jvp":
            out = (F.jvp(f_vector, (x, y), (v, v), create_graph=True)[1],)
        elif name == "hessian":
            out = tuple(b for row in F.hessian(f_scalar, (x, y), create_graph=True) for b in row)
        else:
            out = getattr(F, name)(f_scalar, (x, y), (v, v), create_graph=True)[1]
        assert all(o.requires_grad for o in out)
        total = sum((o * o).sum() for o in out)
        total.backward()
        res.append(([o.detach().numpy() for o in out], x.grad.numpy(), y.grad.numpy()))
    _assert_tree(list(res[0][0]), list(res[1][0]), rtol=1e-10, atol=1e-12)
    _assert_tree([res[0][1], res[0][2]], [res[1][1], res[1][2]], rtol=1e-10, atol=1e-12)


class _Cube(sf.autograd.Function):
    """x^3 with only an array backward (no backward_graph)."""

    def forward(self, a):
        self.x = a
        return a ** 3

    def backward(self, g):
        return 3 * g * self.x ** 2


def test_op_without_second_derivative_falls_back_to_differences():
    f = lambda x: _Cube.apply(x).sum()  # noqa: E731
    h = SF.hessian(f, sf.tensor(X))
    np.testing.assert_allclose(h.numpy(), np.diag(6 * X), atol=1e-8)
    _, hv = SF.hvp(f, sf.tensor(X), sf.tensor(V))
    np.testing.assert_allclose(hv.numpy(), 6 * X * V, atol=1e-8)
    with pytest.raises(DoubleBackwardNotImplemented, match="second derivative of _Cube"):
        SF.hessian(f, sf.tensor(X), create_graph=True)


def test_gradgradcheck_passes_and_catches_a_wrong_backward_graph():
    a = sf.tensor(R.standard_normal((2, 3)), requires_grad=True)
    b = sf.tensor(R.standard_normal((3, 2)), requires_grad=True)
    assert sf.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), (a, b))
    assert sf.autograd.gradgradcheck(lambda a: (a.sigmoid() * a).sum(1), (a,))

    class WrongSecond(sf.autograd.Function):
        """x^2 whose backward_graph forgets that the gradient depends on x."""

        def forward(self, x):
            self.x = x
            return x * x

        def backward(self, g):
            return 2 * g * self.x

        def backward_graph(self, g):
            return g * sf.tensor(2 * self.x)  # a constant: d/dx lost

    assert sf.autograd.gradcheck(lambda x: WrongSecond.apply(x), (a,))
    assert sf.autograd.gradgradcheck(lambda x: WrongSecond.apply(x), (a,), raise_exception=False) is False


def test_tensor_backward_create_graph_wgan_gp_penalty():
    """The WGAN-GP gradient penalty (||d D(x) / dx|| - 1)^2 backpropagated into D's weights."""
    res = []
    for m in (sf, torch):
        gen = np.random.default_rng(7)
        w1 = m.tensor(gen.standard_normal((3, 4)) * 0.5, requires_grad=True)
        w2 = m.tensor(gen.standard_normal((4, 1)) * 0.5, requires_grad=True)
        x = m.tensor(gen.standard_normal((5, 3)), requires_grad=True)
        d = (m.nn.functional.leaky_relu(x @ w1, 0.2) @ w2).tanh().sum()
        g, = m.autograd.grad(d, x, create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        penalty.backward()
        res.append((w1.grad.numpy(), w2.grad.numpy()))
    _assert_tree(list(res[0]), list(res[1]), rtol=1e-10, atol=1e-12)


def test_physics_informed_second_derivative_u_xx():
    """u_xx of a small tanh network by two nested grads, trained through (a PINN residual)."""
    res = []
    for m in (sf, torch):
        gen = np.random.default_rng(8)
        w = m.tensor(gen.standard_normal((1, 5)), requires_grad=True)
        v = m.tensor(gen.standard_normal((5, 1)), requires_grad=True)
        x = m.tensor(np.linspace(-1, 1, 4).reshape(4, 1), requires_grad=True)
        u = (x @ w).tanh() @ v
        u_x, = m.autograd.grad(u.sum(), x, create_graph=True)
        u_xx, = m.autograd.grad(u_x.sum(), x, create_graph=True)
        loss = ((u_xx + u) ** 2).mean()
        loss.backward()
        res.append((u_xx.detach().numpy(), w.grad.numpy(), v.grad.numpy()))
    _assert_tree(list(res[0]), list(res[1]), rtol=1e-10, atol=1e-12)


def test_func_grad_nests_to_second_and_third_derivatives():
    f = lambda x: (x.sin() * x ** 2).sum()  # noqa: E731
    x0 = X
    for order in (1, 2, 3):
        sfn, tfn = f, f
        for _ in range(order):
            sfn_prev, tfn_prev = sfn, tfn
            sfn = (lambda h: lambda x: sf.func.grad(h)(x).sum())(sfn_prev)
            tfn = (lambda h: lambda x: torch.func.grad(h)(x).sum())(tfn_prev)
        got = sf.func.grad(sfn_prev)(sf.tensor(x0))
        want = torch.func.grad(tfn_prev)(torch.tensor(x0))
        assert not got.requires_grad
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_func_grad_argnums_has_aux_and_grad_and_value():
    f = lambda x, y: ((x * y).exp().sum(), x.sum())  # noqa: E731
    for m in (sf, torch):
        (gx, gy), aux = m.func.grad(f, argnums=(0, 1), has_aux=True)(m.tensor(X), m.tensor(Y))
        g2, (val, aux2) = m.func.grad_and_value(f, argnums=1, has_aux=True)(m.tensor(X), m.tensor(Y))
        if m is sf:
            got = [gx.numpy(), gy.numpy(), aux.numpy(), g2.numpy(), val.numpy()]
        else:
            want = [gx.numpy(), gy.numpy(), aux.numpy(), g2.numpy(), val.numpy()]
    _assert_tree(got, want)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        sf.func.grad(lambda x: x * 2)(sf.tensor(X))
