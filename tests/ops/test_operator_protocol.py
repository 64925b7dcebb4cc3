"""Python's binary-operator protocol with objects that are not tensors, as PyTorch plays it:
``tensor + x`` hands an operand it cannot take to ``x.__radd__`` (NotImplemented), so a
type that defines the reflected method (a MaskedTensor, a user's wrapper) gets the call;
without one, Python's "unsupported operand type(s)" TypeError; the functional form
(``torch.add(tensor, x)``) raises a TypeError itself."""

import operator

import pytest
import torch

import shardflow

OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
             operator.mod, operator.floordiv]


class Reflected:
    """Defines only the reflected operators: each returns its name and the left operand."""


for _name in ("radd", "rsub", "rmul", "rtruediv", "rpow", "rmod", "rfloordiv"):
    setattr(Reflected, f"__{_name}__", (lambda n: lambda self, other: (f"__{n}__", other.tolist()))(_name))


class Opaque:
    pass


@pytest.mark.parametrize("op", OPERATORS, ids=lambda f: f.__name__)
def test_operators_hand_foreign_operands_to_their_reflected_method(op):
    got = op(shardflow.tensor([1.0, 2.0]), Reflected())
    want = op(torch.tensor([1.0, 2.0]), Reflected())
    assert got == want and got[0].startswith("__r")


@pytest.mark.parametrize("op", OPERATORS, ids=lambda f: f.__name__)
def test_without_a_reflected_method_python_raises_unsupported_operand(op):
    for lib in (shardflow, torch):
        with pytest.raises(TypeError, match="unsupported operand type"):
            op(lib.tensor([1.0, 2.0]), Opaque())


def test_functional_form_raises_type_error_not_notimplemented():
    for f in (shardflow.add, shardflow.mul, shardflow.sub, shardflow.div):
        with pytest.raises(TypeError):
            f(shardflow.tensor([1.0]), Opaque())


def test_number_operands_still_work_on_the_operator_path():
    t = shardflow.tensor([1.0, 2.0])
    assert (t + 1).tolist() == [2.0, 3.0] and (2 * t).tolist() == [2.0, 4.0]
    assert (t / 2).tolist() == [0.5, 1.0] and (t ** 2).tolist() == [1.0, 4.0]


def test_masked_tensor_on_the_right_of_a_plain_tensor():
    data, mask = [1.0, 2.0, 3.0], [True, False, True]
    got = shardflow.tensor([10.0, 20.0, 30.0]) + shardflow.masked.masked_tensor(
        shardflow.tensor(data), shardflow.tensor(mask))
    assert got.get_data().tolist()[0] == 11.0 and got.get_mask().tolist() == mask
