"""Higher-order gradients through custom autograd Functions (``BackwardCFunction.backward_graph``):
the user's backward runs under grad mode with ``ctx.saved_tensors`` carrying their history, so
``create_graph=True`` gives differentiable gradients; compared with torch 2.13, and in float64
with finite differences of the first-order gradient. ``once_differentiable`` backwards raise
torch's error on a second differentiation."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.array([0.5, -1.25, 0.75], dtype=np.float64)
V = np.array([1.0, -2.0, 0.5], dtype=np.float64)


def make_functions(lib):
    class Sq(lib.autograd.Function):  # saves its input
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    class Exp(lib.autograd.Function):  # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class PowK(lib.autograd.Function):  # a non-Tensor argument and ctx attributes
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_backward(x)
            return x ** k

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.k * x ** (ctx.k - 1), None

    class MulSin(lib.autograd.Function):  # two inputs, setup_context style
        @staticmethod
        def forward(x, w):
            return x.sin() * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * x.cos() * w, g * x.sin()

    return {
        "square": lambda x: Sq.apply(x),
        "exp": lambda x: Exp.apply(x),
        "pow3": lambda x: PowK.apply(x, 3),
        "mul_sin": lambda x: MulSin.apply(x, x * 2),
        "square_of_exp": lambda x: Sq.apply(Exp.apply(x) - 1),
    }


SPECS = ["square", "exp", "pow3", "mul_sin", "square_of_exp"]


def _grad_of_grad(lib, name, dtype):
    f = make_functions(lib)[name]
    x = lib.tensor(X, dtype=dtype, requires_grad=True)
    v = lib.tensor(V, dtype=dtype)
    try:
        g, = lib.autograd.grad(f(x).sum(), x, create_graph=True)
    except NotImplementedError as e:
        assert "create_graph" in str(e)
        pytest.skip(f"the engine has no higher-order gradients yet: {e}")
    (g * v).sum().backward()
    return g, x.grad


@pytest.mark.parametrize("name", SPECS)
def test_second_derivative_matches_torch(name):
    g1, h1 = _grad_of_grad(sf, name, sf.float64)
    g2, h2 = _grad_of_grad(torch, name, torch.float64)
    assert g1.requires_grad and g1.grad_fn is not None
    np.testing.assert_allclose(np.asarray(g1.detach()), g2.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(h1), h2.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", SPECS)
def test_second_derivative_matches_finite_differences(name):
    """d/dx (v . grad f(x)) by central differences of shardflow's own first-order gradient."""
    _, hvp = _grad_of_grad(sf, name, sf.float64)
    f = make_functions(sf)[name]

    def first_grad(a):
        x = sf.tensor(a, dtype=sf.float64, requires_grad=True)
        f(x).sum().backward()
        return np.asarray(x.grad)

    eps = 1e-6
    numeric = np.array([
        ((first_grad(X + eps * e) - first_grad(X - eps * e)) / (2 * eps)) @ V
        for e in np.eye(len(X))
    ])
    np.testing.assert_allclose(np.asarray(hvp), numeric, rtol=1e-6, atol=1e-8)


def test_third_derivative_of_custom_pow_matches_torch():
    out = []
    for lib in (sf, torch):
        f = make_functions(lib)["pow3"]
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        try:
            g1, = lib.autograd.grad(f(x).sum(), x, create_graph=True)
        except NotImplementedError as e:
            pytest.skip(f"the engine has no higher-order gradients yet: {e}")
        g2, = lib.autograd.grad(g1.sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        out.append([np.asarray(t.detach()) if lib is sf else t.detach().numpy() for t in (g1, g2, g3)])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def make_once_differentiable_sin(lib):
    class Sin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos()

    return Sin


def test_once_differentiable_refuses_second_derivative_like_torch():
    for lib in (sf, torch):
        Sin = make_once_differentiable_sin(lib)
        x = lib.tensor(X, requires_grad=True)
        v = lib.ones(3, dtype=lib.float64, requires_grad=True)
        try:
            g, = lib.autograd.grad(Sin.apply(x), x, v, create_graph=True)
        except NotImplementedError as e:
            pytest.skip(f"the engine has no higher-order gradients yet: {e}")
        np.testing.assert_allclose(np.asarray(g.detach()) if lib is sf else g.detach().numpy(), np.cos(X))
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked "
                                               "with @once_differentiable"):
            g.sum().backward()
        # a constant seed: the wrapper builds no graph at all (torch's approximation)
        g, = lib.autograd.grad(Sin.apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad


def make_sincos(lib):
    class SinCos(lib.autograd.Function):  # two outputs, one saved output, one saved input
        @staticmethod
        def forward(ctx, x):
            s, c = x.sin(), x.cos()
            ctx.save_for_backward(x, c)
            return s, c

        @staticmethod
        def backward(ctx, gs, gc):
            x, c = ctx.saved_tensors
            return gs * c - gc * x.sin()

    return SinCos


def test_second_derivative_through_several_outputs_matches_torch():
    out = []
    for lib in (sf, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        s, c = make_sincos(lib).apply(x)
        try:
            g, = lib.autograd.grad((s * c + c).sum(), x, create_graph=True)
        except NotImplementedError as e:
            pytest.skip(f"the engine has no higher-order gradients yet: {e}")
        (g * lib.tensor(V)).sum().backward()
        out.append((np.asarray(g.detach()) if lib is sf else g.detach().numpy(),
                    np.asarray(x.grad) if lib is sf else x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-10)



@pytest.mark.parametrize("name", ["square", "exp", "pow3", "mul_sin"])
def test_gradcheck_and_gradgradcheck_pass_on_custom_functions(name):
    for lib in (sf, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        f = make_functions(lib)[name]
        assert lib.autograd.gradcheck(f, (x,))
        try:
            assert lib.autograd.gradgradcheck(f, (x,))
        except NotImplementedError as e:
            pytest.skip(f"the engine has no higher-order gradients yet: {e}")


def test_gradgradcheck_catches_a_wrong_custom_second_derivative():
    class WrongSq(sf.autograd.Function):  # right first derivative, detached second
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x.detach() * g

    x = sf.tensor(X, dtype=sf.float64, requires_grad=True)
    assert sf.autograd.gradcheck(WrongSq.apply, (x,))
    assert sf.autograd.gradgradcheck(WrongSq.apply, (x,), raise_exception=False) is False
