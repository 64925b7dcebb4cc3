"""``scatter`` / ``scatter_`` / ``scatter_add`` / ``gather`` of a 1-d tensor with a 0-d index:
torch counts the 0-d index (and a 0-d src) as one element, so the Learn-the-Basics transforms
tutorial's one-hot target transform, ``torch.zeros(10).scatter_(0, torch.tensor(y),
value=1)``, works; shardflow raised "Index tensor must have the same number of dimensions"
(and an IndexError for a 0-d src). ``gather`` with a 0-d index gives a 0-d result, as
torch's. A 0-d index of a 2-d tensor is still refused, as in torch."""

import numpy as np
import pytest
import torch

import shardflow


def _both(fn):
    return fn(shardflow), fn(torch)


@pytest.mark.parametrize("name, fn", [
    ("one-hot scatter_ value=", lambda lib: lib.zeros(10, dtype=lib.float).scatter_(0, lib.tensor(3), value=1)),
    ("scatter scalar", lambda lib: lib.zeros(4).scatter(0, lib.tensor(1), 2.0)),
    ("scatter 1-element src", lambda lib: lib.zeros(4).scatter(0, lib.tensor(2), lib.tensor([5.0, 6.0]))),
    ("scatter 0-d src", lambda lib: lib.zeros(4).scatter(0, lib.tensor(2), lib.tensor(5.0))),
    ("scatter_add", lambda lib: lib.zeros(4).scatter_add(0, lib.tensor(1), lib.ones(1))),
    ("gather", lambda lib: lib.arange(4.0).gather(0, lib.tensor(2))),
    ("torch.gather", lambda lib: lib.gather(lib.arange(5.0), 0, lib.tensor(4))),
])
def test_zero_dim_index_like_torch(name, fn):
    got, want = _both(fn)
    assert tuple(got.shape) == tuple(want.shape), name
    np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_gather_zero_dim_index_gradient_like_torch():
    grads = []
    for lib in (shardflow, torch):
        x = lib.arange(4.0, requires_grad=True)
        y = x.gather(0, lib.tensor(2))
        assert y.grad_fn.name() == "GatherBackward0"
        (y * 3).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)


def test_scatter_zero_dim_index_gradient():
    """torch's own backward of this scatter fails (ScatterBackward0 returns a 0-d gradient
    for a 1-element src); shardflow's gives the src its one gathered gradient."""
    x = shardflow.zeros(4, requires_grad=True)
    src = shardflow.ones(1, requires_grad=True)
    (x.scatter(0, shardflow.tensor(2), src * 3) * shardflow.arange(4.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0, 3.0])
    np.testing.assert_array_equal(src.grad.numpy(), [6.0])


def test_zero_dim_index_of_a_matrix_is_refused_like_torch():
    for lib in (shardflow, torch):
        with pytest.raises(RuntimeError, match="same number of dimensions"):
            lib.zeros(2, 2).scatter_(0, lib.tensor(1), value=1)
