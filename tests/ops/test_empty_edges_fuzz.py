"""Empty-tensor and error-type edges against PyTorch (found by tests/ops/fuzz): softmax /
log_softmax of an empty tensor raised NumPy's ValueError; matmul of (1, 0, 0) @ (0, 0)
failed its reshape; amax/argmax over an empty dim raise IndexError (torch's type);
integer division by a zero divisor raises an error that is both torch's RuntimeError and
Python's ZeroDivisionError, and none when the result is empty; all/any keep uint8;
one_hot of an empty tensor without num_classes and searchsorted with 0-d boundaries raise
torch's RuntimeError. addcmul/addcdiv with 0-d tensor operands and value != 1 raised
TypeError (a NumPy scalar given ``out=``); ``where(cond)`` of a 0-d cond raised ValueError."""

import numpy as np
import pytest
import torch

import shardflow as sf

VALUE_CASES = {
    "softmax_empty": lambda L: L.softmax(L.zeros(0), 0),
    "log_softmax_empty": lambda L: L.log_softmax(L.zeros(2, 0), -1),
    "log_softmax_empty_other_dim": lambda L: L.log_softmax(L.zeros(2, 0), 0),
    "matmul_empty_batch": lambda L: L.matmul(L.zeros(1, 0, 0), L.zeros(0, 0)),
    "matmul_empty_k": lambda L: L.matmul(L.ones(2, 3, 0), L.ones(0, 2)),
    "trunc_div_empty_by_zero": lambda L: L.div(L.zeros(0, dtype=L.int64), L.tensor([0]), rounding_mode="trunc"),
    "remainder_empty_by_zero": lambda L: L.remainder(L.zeros(2, 0, dtype=L.int64), L.tensor(0)),
    "all_uint8": lambda L: L.all(L.tensor([3, 0], dtype=L.uint8)),
    "where_0d_true": lambda L: L.where(L.tensor(2.0))[0],
    "where_0d_false": lambda L: L.where(L.tensor(0.0))[0],
    "addcmul_0d_value": lambda L: L.addcmul(L.tensor(1.0), L.tensor(2.0), L.tensor(3.0), value=0.5),
    "addcdiv_0d_bf16": lambda L: L.addcdiv(L.tensor([[0.5]], dtype=L.bfloat16), L.tensor(0.5, dtype=L.bfloat16),
                                          L.tensor(0.5, dtype=L.bfloat16), value=2),
    "any_uint8_dim": lambda L: L.any(L.tensor([[3, 0]], dtype=L.uint8), 1),
}


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_empty_edge_values_match_torch(name):
    t, s = VALUE_CASES[name](torch), VALUE_CASES[name](sf)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(s.shape) == tuple(t.shape)
    if t.dtype.is_floating_point:  # (torch has no NumPy bfloat16)
        s, t = s.double(), t.double()
    np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_softmax_of_empty_has_a_gradient():
    x = sf.zeros(2, 0, requires_grad=True)
    sf.log_softmax(x, 1).sum().backward()
    assert tuple(x.grad.shape) == (2, 0)


ERROR_CASES = {
    "amax_empty": (lambda L: L.amax(L.zeros(0), 0), IndexError),
    "argmax_empty": (lambda L: L.argmax(L.zeros(0)), IndexError),
    "argmin_empty_dim": (lambda L: L.argmin(L.zeros(2, 0), 1), IndexError),
    "int_div_by_zero": (lambda L: L.div(L.tensor([1]), L.tensor([0]), rounding_mode="floor"), RuntimeError),
    "one_hot_empty": (lambda L: L.nn.functional.one_hot(L.zeros(0, dtype=L.int64)), RuntimeError),
    "searchsorted_0d": (lambda L: L.searchsorted(L.tensor(1.0), L.tensor([1.0])), RuntimeError),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_error_types_match_torch(name):
    f, exc = ERROR_CASES[name]
    with pytest.raises(exc):
        f(torch)
    with pytest.raises(exc):
        f(sf)


def test_integer_division_by_zero_is_also_zero_division_error():
    with pytest.raises(ZeroDivisionError):
        sf.remainder(sf.tensor([1]), sf.tensor([0]))
