"""``linspace``/``logspace`` take 0-d tensors as ``start``/``end``, as torch does (a tensor
raised AttributeError "'Tensor' object has no attribute 'astype'"), and raise torch's errors
for a tensor with dims, a negative ``steps`` (was NumPy's ValueError) and a float ``steps``
(was accepted). Found probing timm/Swin idioms (``torch.linspace(0, rate, depth)``)."""

import numpy as np
import pytest
import torch

import shardflow

VALUES = {
    "tensors": lambda lib: lib.linspace(lib.tensor(0.1), lib.tensor(0.7), 7),
    "tensor_and_number": lambda lib: lib.linspace(0, lib.tensor(0.2), 4),
    "int_tensors": lambda lib: lib.linspace(lib.tensor(0), lib.tensor(5), 3),
    "float64_tensor": lambda lib: lib.linspace(lib.tensor(0.5, dtype=lib.float64), 1, 3),
    "int_dtype": lambda lib: lib.linspace(lib.tensor(2), 10, 5, dtype=lib.int64),
    "tensor_steps": lambda lib: lib.linspace(0, 1, lib.tensor(3)),
    "logspace_tensor": lambda lib: lib.logspace(lib.tensor(0.0), 1, 3),
    "logspace_base": lambda lib: lib.logspace(lib.tensor(1.0), lib.tensor(3.0), 3, base=2.0),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_zero_dim_tensor_bounds_like_torch(name):
    sf, th = VALUES[name](shardflow), VALUES[name](torch)
    assert str(sf.dtype).replace("shardflow", "torch") == str(th.dtype)
    np.testing.assert_array_equal(sf.numpy(), th.numpy())  # bit for bit
    assert not sf.requires_grad


def test_result_of_a_tensor_that_requires_grad_is_a_plain_tensor():
    for lib in (shardflow, torch):
        out = lib.linspace(0, lib.tensor(1.0, requires_grad=True), 3)
        assert not out.requires_grad and out.grad_fn is None


ERRORS = {
    "start_with_dims": (RuntimeError, "linspace only supports 0-dimensional start and end tensors, but got start with 1 "
                                      "dimension", lambda lib: lib.linspace(lib.tensor([0.0]), 1, 3)),
    "end_with_dims": (RuntimeError, "but got end with 2 dimension", lambda lib: lib.linspace(0, lib.tensor([[1.0]]), 3)),
    "negative_steps": (RuntimeError, "number of steps must be non-negative", lambda lib: lib.linspace(0, 1, -1)),
    "float_steps": (TypeError, "float", lambda lib: lib.linspace(0, 1, 3.0)),
    "logspace_negative_steps": (RuntimeError, "number of steps must be non-negative", lambda lib: lib.logspace(0, 1, -2)),
    "logspace_start_with_dims": (RuntimeError, "logspace only supports 0-dimensional start and end tensors",
                                 lambda lib: lib.logspace(lib.tensor([0.0]), 1, 3)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_like_torch(name):
    kind, match, make = ERRORS[name]
    for lib in (torch, shardflow):
        with pytest.raises(kind, match=match):
            make(lib)
