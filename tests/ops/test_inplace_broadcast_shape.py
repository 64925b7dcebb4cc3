"""An in-place op whose operands broadcast to a larger shape than its tensor raises torch's
RuntimeError ("output with shape [1] doesn't match the broadcast shape [3]"): NumPy's
ValueError leaked before, and a tensor with history (or an operand that requires grad)
silently took the larger shape. Broadcasting into the tensor's own shape still works."""

import numpy as np
import pytest
import torch

import shardflow

GROWS = {
    "add_": lambda lib: lib.ones(1).add_(lib.ones(3)),
    "mul_2d": lambda lib: lib.ones(1).mul_(lib.ones(2, 3)),
    "sub_cross": lambda lib: lib.ones(2, 1).sub_(lib.ones(1, 2)),
    "non_leaf_with_history": lambda lib: (lib.ones(1, requires_grad=True) * 1).add_(lib.ones(3)),
    "operand_requires_grad": lambda lib: lib.ones(1).add_(lib.ones(3, requires_grad=True)),
    "div_": lambda lib: lib.ones(1, 1).div_(lib.full((2, 2), 2.0)),
}


@pytest.mark.parametrize("name", list(GROWS))
def test_in_place_op_cannot_grow_its_tensor(name):
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match=r"output with shape \[.*\] doesn't match the broadcast shape"):
            GROWS[name](lib)


def test_broadcasting_into_the_tensors_shape_is_unchanged():
    for lib in (torch, shardflow):
        a = lib.ones(2, 3)
        a.add_(lib.arange(3.0)).mul_(lib.tensor([[2.0], [3.0]]))
        np.testing.assert_array_equal(a.numpy(), [[2.0, 4.0, 6.0], [3.0, 6.0, 9.0]])
        w = lib.ones(2, 3, requires_grad=True)
        h = w * 1
        h.add_(lib.arange(3.0, requires_grad=True))
        h.sum().backward()
        assert tuple(h.shape) == (2, 3) and w.grad.tolist() == [[1.0] * 3] * 2
