"""Node names torch prints: ``x.min()`` of a tensor whose elements are all equal was named
``MaxBackward1`` (max() and min() shared one node, told apart by its values), ``amax`` /
``amin`` were ``MaxBackward1`` / ``MinBackward1`` (torch: ``AmaxBackward0`` /
``AminBackward0``), and ``cumsum`` was ``CumSumBackward0`` (torch: ``CumsumBackward0``).
The names also hold after backward has freed the nodes."""

import pytest
import torch

import shardflow

CASES = {
    "max()": lambda lib, x: x.max(),
    "min()": lambda lib, x: x.min(),
    "torch.max": lambda lib, x: lib.max(x),
    "torch.min": lambda lib, x: lib.min(x),
    "amax()": lambda lib, x: lib.amax(x),
    "amax(1)": lambda lib, x: lib.amax(x, 1),
    "amin(0)": lambda lib, x: lib.amin(x, 0),
    "x.amin(dim=(0, 1))": lambda lib, x: x.amin(dim=(0, 1)),
    "cumsum(1)": lambda lib, x: x.cumsum(1),
    "torch.cumsum": lambda lib, x: lib.cumsum(x, 0),
}


@pytest.mark.parametrize("values", [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], [[3.0, -1.0, 2.0], [0.5, 7.0, -4.0]]])
@pytest.mark.parametrize("name", list(CASES))
def test_node_names_like_torch(name, values):
    names = []
    for lib in (shardflow, torch):
        x = lib.tensor(values, requires_grad=True)
        y = CASES[name](lib, x)
        before = y.grad_fn.name()
        y.sum().backward()
        names.append((before, y.grad_fn.name()))
    assert names[0] == names[1], name
