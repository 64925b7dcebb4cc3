"""``tensor.grad = value`` against PyTorch: a Tensor or None is stored; anything else (a
float, as in the 'Learning PyTorch with Examples' polynomial_autograd.py's
``a.grad, b.grad, c.grad, d.grad = 0., 0., 0., 0.``) is a TypeError, as in torch."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
@pytest.mark.parametrize("value", [0.0, 0, [0.0], "0"])
def test_assigning_a_non_tensor_grad_is_a_type_error(lib, value):
    a = lib.randn((), requires_grad=True)
    (a * 2).backward()
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        a.grad = value
    assert a.grad.item() == 2.0  # unchanged


def test_assigned_tensor_and_none_are_kept_as_torch_keeps_them():
    for lib in (torch, shardflow):
        a = lib.ones(3, requires_grad=True)
        g = lib.full((3,), 0.5)
        a.grad = g
        assert a.grad is g
        (a * 2).sum().backward()  # accumulates into the assigned tensor's values
        assert a.grad.tolist() == [2.5, 2.5, 2.5]
        a.grad = None
        assert a.grad is None
        (a * 3).sum().backward()
        assert a.grad.tolist() == [3.0, 3.0, 3.0]


def test_parameter_grad_assignment_checks_too():
    p = shardflow.nn.Parameter(shardflow.zeros(2))
    with pytest.raises(TypeError, match="got grad of type float"):
        p.grad = 1.0
    tp = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(TypeError, match="got grad of type float"):
        tp.grad = 1.0


def test_del_grad_leaves_none():
    for lib in (torch, shardflow):
        a = lib.ones(2, requires_grad=True)
        (a * 2).sum().backward()
        del a.grad
        assert a.grad is None


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
@pytest.mark.parametrize("shape", [(1,), (3,), (2, 1)])
def test_assigning_a_grad_of_another_shape_is_refused(lib, shape):
    # torch: RuntimeError; shardflow stored it, and the optimizer then broadcast it silently
    a = lib.ones(2, requires_grad=True)
    (a * 2).sum().backward()
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[.*\]' to a "
                                           r"tensor of size '\[2\]'"):
        a.grad = lib.ones(shape)
    assert a.grad.tolist() == [2.0, 2.0]  # unchanged
