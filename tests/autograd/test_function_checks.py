"""The engine checks what a Function's backward returns: one gradient per input, each of
its input's shape (or one that sums down to it, as PyTorch allows). Each case is written
as a shardflow Function and as the same torch.autograd.Function."""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd.function import Function


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


class DropsSecond(Function):
    """a * b whose backward forgets b's gradient."""

    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        return g * self.b


class TorchDropsSecond(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.saved_tensors[1],)


def test_too_few_gradients_raises_naming_the_function_like_torch():
    a, ta = _pair((2, 3))
    b, tb = _pair((2, 3), 1)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        TorchDropsSecond.apply(ta, tb).sum().backward()
    with pytest.raises(RuntimeError, match=r"function DropsSecond returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        DropsSecond.apply(a, b).sum().backward()


def test_missing_trailing_gradient_of_input_needing_none_is_allowed():
    # the ops' convention for targets and constants: no gradient is lost, so no error
    a, _ = _pair((2, 3))
    b = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    DropsSecond.apply(a, sf.tensor(b)).sum().backward()  # b requires no grad
    np.testing.assert_allclose(a.grad.numpy(), b)


class ExtraNone(Function):
    def forward(self, a):
        return a * 2

    def backward(self, g):
        return g * 2, None


def test_extra_trailing_none_is_dropped():
    a, _ = _pair((3,))
    ExtraNone.apply(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 2, np.float32))


class WrongShape(Function):
    """Backward sums its gradient over rows: shape (3,) for an input of shape (2, 3)."""

    def forward(self, a):
        return a * 2

    def backward(self, g):
        return g.sum(0)


class TorchWrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g.sum(0)


@pytest.mark.parametrize("through", ["leaf", "intermediate"])
def test_wrong_gradient_shape_raises_naming_function_and_index(through):
    a, ta = _pair((2, 3))
    if through == "intermediate":
        a, ta = a * 1.0, ta * 1.0
    msg = r"returned an invalid gradient at index 0 - got \[3\] but expected shape compatible with \[2, 3\]"
    with pytest.raises(RuntimeError, match=msg):
        TorchWrongShape.apply(ta).sum().backward()
    with pytest.raises(RuntimeError, match="Function WrongShape " + msg):
        WrongShape.apply(a).sum().backward()


class BroadcastGrad(Function):
    """Returns its input's gradient broadcast to (4, *shape) (an unreduced broadcast)."""

    def forward(self, a, b):
        self.shape = np.broadcast_shapes(a.shape, b.shape)
        return a + b

    def backward(self, g):
        big = np.broadcast_to(g, (4, *g.shape)) / 4
        return big, big


class TorchBroadcastGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        big = g.expand(4, *g.shape) / 4
        return big, big


def test_gradient_of_broadcast_shape_is_summed_down_like_torch():
    a, ta = _pair((2, 1))
    b, tb = _pair((1, 3), 1)
    w = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    (BroadcastGrad.apply(a, b) * sf.tensor(w)).sum().backward()
    (TorchBroadcastGrad.apply(ta, tb) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_instantiating_a_custom_function_warns_as_torch():
    import warnings

    def warned(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            Double()
            Double.apply(lib.ones(1, requires_grad=True)).sum().backward()  # applying does not warn
        return [(c.category, str(c.message).split("> ")[1]) for c in w]

    assert warned(sf) == warned(torch) != []
