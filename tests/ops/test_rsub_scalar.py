"""``number - tensor`` (d2l.ai prints ``true_b - b``): one node named torch's ``RsubBackward1``
with one edge (shardflow built ``AddBackward0`` over a ``NegBackward0``), the same values
and gradients; and a bool tensor on either side of ``-`` (``1 - mask``, ``mask - 1``,
``torch.rsub(mask, 1)``) is refused with torch's RuntimeError (shardflow returned an int
tensor)."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_number_minus_tensor_like_torch(dtype):
    out = []
    for lib in (shardflow, torch):
        x = lib.tensor([0.5, 2.0, -3.25], dtype=getattr(lib, dtype), requires_grad=True)
        y = 4.2 - x * x
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        out.append((y.detach().numpy(), g.detach().numpy(), x.grad.numpy(), y.grad_fn.name(),
                    len(y.grad_fn.next_functions), repr(y).split("grad_fn=")[1]))
    (sy, sg, sgg, *s_rest), (ty, tg, tgg, *t_rest) = out
    np.testing.assert_array_equal(sy, ty)
    np.testing.assert_array_equal(sg, tg)
    np.testing.assert_array_equal(sgg, tgg)
    assert s_rest == t_rest == ["RsubBackward1", 1, "<RsubBackward1>)"]


def test_rsub_function_like_torch():
    for other in (3, 2.5):
        got = [lib.rsub(lib.tensor([1.0, 4.0]), other, alpha=2).numpy() for lib in (shardflow, torch)]
        np.testing.assert_array_equal(*got)
    got = [(7 - lib.tensor([1, 2])).numpy() for lib in (shardflow, torch)]
    np.testing.assert_array_equal(*got)
    assert (7 - shardflow.tensor([1, 2])).dtype == shardflow.int64


@pytest.mark.parametrize("call", [
    lambda lib, m: 1 - m, lambda lib, m: m - 1, lambda lib, m: 1.5 - m,
    lambda lib, m: lib.tensor([1]) - m, lambda lib, m: m - lib.tensor([1.0]),
    lambda lib, m: lib.sub(m, 1), lambda lib, m: lib.rsub(m, 1),
])
def test_bool_tensor_in_subtraction_refused_like_torch(call):
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        call(torch, torch.tensor([True, False]))
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported.*logical_not"):
        call(shardflow, shardflow.tensor([True, False]))


def test_two_bools_keep_torch_message():
    for lib in (shardflow, torch):
        with pytest.raises(RuntimeError, match="with two bool tensors"):
            lib.tensor([True]) - True


@pytest.mark.parametrize("call", [
    lambda lib: True - lib.tensor([1.0]), lambda lib: lib.tensor([1.0]) - True,
    lambda lib: lib.tensor([1]) - False, lambda lib: lib.sub(lib.tensor([1.0]), True),
    lambda lib: lib.rsub(lib.tensor([1.0]), True), lambda lib: lib.tensor([1.0]).sub_(True),
    lambda lib: lib.tensor([2.0]).sub(True, alpha=2),
])
def test_python_bool_against_a_number_tensor_refused_like_torch(call):
    # a bool scalar counted as 1 gave [0.] where torch raises (a silent result)
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            call(lib)


def test_python_bool_against_a_bool_tensor_says_two_bools():
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match="with two bool tensors"):
            True - lib.tensor([True])
