"""``shardflow.testing.gradcheck`` must be able to fail: it raises when there is nothing to
check, and catches wrong gradients (also when it checks only a few elements)."""

import numpy as np
import pytest

import shardflow as sf
from shardflow.autograd.function import Function
from shardflow.testing.gradcheck import gradcheck


def _x(shape=(2, 3), requires_grad=True):
    a = np.random.default_rng(0).standard_normal(shape)
    return sf.tensor(a, requires_grad=requires_grad)


class WrongAtLast(Function):
    """y = 2x whose backward is wrong (by 1) only for the last element."""

    def forward(self, a):
        return a * 2

    def backward(self, g):
        out = g * 2
        out.reshape(-1)[-1] += 1.0
        return out


def test_no_input_requiring_grad_raises():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda x: x * 2, [_x(requires_grad=False)])


def test_no_float_output_raises():
    with pytest.raises(ValueError, match="no floating-point tensor"):
        gradcheck(lambda x: x > 0, [_x()])


def test_output_without_graph_is_checked_as_zero_gradient():
    # the function depends on x but hides it from autograd: analytic 0, numeric 2
    def detached(x):
        return sf.tensor(x.detach().numpy() * 2)

    with pytest.raises(AssertionError, match="gradcheck failed for input 0"):
        gradcheck(detached, [_x()])


def test_correct_gradient_passes_and_wrong_one_fails():
    assert gradcheck(lambda x: (x * x).sum(), [_x()])
    with pytest.raises(AssertionError, match="gradcheck failed"):
        gradcheck(WrongAtLast.apply, [_x()])
    assert gradcheck(WrongAtLast.apply, [_x()], raise_exception=False) is False


def test_elements_subset_includes_the_last_element():
    x = _x((50, 40))
    with pytest.raises(AssertionError, match="checked flat elements"):
        gradcheck(WrongAtLast.apply, [x], elements=4)
    assert gradcheck(lambda t: t * 2, [x], elements=4)


def test_non_contiguous_input_raises():
    x = sf.tensor(np.random.default_rng(1).standard_normal((3, 4)).T, requires_grad=True)
    with pytest.raises(ValueError, match="contiguous"):
        gradcheck(lambda t: t * 2, [x])
