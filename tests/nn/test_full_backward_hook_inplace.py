"""A module with a full backward hook passes its inputs and outputs through torch's
``BackwardHookFunction``, an identity node whose outputs are its inputs as they are: an
in-place write into one while grad is recorded (``ReLU(inplace=True)`` on the hooked input,
``out += 1`` on the hooked output) raises in torch, because the rebase would bypass the
hooks. shardflow accepted it silently (guided-backprop code copied onto torchvision's
``ReLU(inplace=True)`` models ran on shardflow and failed on torch). The node's name is
torch's ``BackwardHookFunctionBackward`` (it was ``_BackwardHookFnBackward0``)."""

import pytest
import torch

import shardflow


def _hooked(lib, module):
    module.register_full_backward_hook(lambda mod, grad_in, grad_out: None)
    return module


class AddInto(torch.nn.Module):
    def forward(self, x, y):
        y.add_(1)
        return x + y


class SfAddInto(shardflow.nn.Module):
    def forward(self, x, y):
        y.add_(1)
        return x + y


CASES = {
    "inplace relu on the hooked input": lambda lib: _hooked(lib, lib.nn.ReLU(inplace=True))(
        lib.randn(2, 3, requires_grad=True) * 1),
    "+= on the hooked output": lambda lib: _hooked(lib, lib.nn.Linear(3, 2))(
        lib.randn(2, 3, requires_grad=True)).__iadd__(1),
    "relu_ on the hooked output": lambda lib: lib.relu_(_hooked(lib, lib.nn.Linear(3, 2))(
        lib.randn(2, 3, requires_grad=True))),
    "the second input changed in forward": lambda lib: _hooked(lib, (AddInto if lib is torch else SfAddInto)())(
        lib.randn(2, requires_grad=True), lib.randn(2, requires_grad=True) * 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_inplace_on_backward_hook_output_raises_like_torch(case):
    with pytest.raises(RuntimeError) as want:
        CASES[case](torch)
    with pytest.raises(RuntimeError) as got:
        CASES[case](shardflow)
    assert str(got.value).startswith(str(want.value).split(" is a view")[0] + " is a view and is being modified inplace")
    assert "clone" in str(got.value)


def test_still_allowed_where_torch_allows_it():
    for lib in (torch, shardflow):
        relu = _hooked(lib, lib.nn.ReLU(inplace=True))
        x = lib.tensor([-1.0, 2.0])
        assert relu(x).tolist() == [0.0, 2.0]  # no input requires grad: no hook node
        with lib.no_grad():
            assert relu(lib.tensor([-3.0, 1.0])).tolist() == [0.0, 1.0]
        lin = _hooked(lib, lib.nn.Linear(2, 2))
        out = lin(lib.randn(1, 2, requires_grad=True)).clone()
        out += 1  # a clone is not the hook node's output
        out.sum().backward()


def test_node_name_like_torch():
    names = [_hooked(lib, lib.nn.Linear(2, 2))(lib.randn(1, 2, requires_grad=True)).grad_fn.name()
             for lib in (torch, shardflow)]
    assert names[1] == names[0] == "BackwardHookFunctionBackward"
