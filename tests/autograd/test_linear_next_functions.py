"""``linear``'s node shows its inputs as torch's does: torch computes ``addmm(bias, x,
weight.t())`` (``mm`` without a bias), so ``next_functions`` lists the bias first and reaches
the weight through a ``TBackward0`` node; shardflow listed ``(x, weight, bias)``, and the
blitz tutorial's ``loss.grad_fn.next_functions[0][0].next_functions[0][0]`` printed
``ReluBackward0`` where torch prints ``AccumulateGrad``. A leaf's node prints as torch's
(``<AccumulateGrad object at 0x...>``)."""

import re

import pytest
import torch

import shardflow


def _walk(fn, depth=0):
    """(depth, node name, leaf id or None) over next_functions, depth first."""
    out = []
    for node, nr in fn.next_functions:
        if node is None:
            out.append((depth, None, None))
            continue
        leaf = getattr(node, "variable", None)
        out.append((depth, node.name(), None if leaf is None else leaf.shape))
        out += _walk(node, depth + 1)
    return out


def _graph(lib, bias, input_grad, weight_grad=True):
    lin = lib.nn.Linear(3, 2, bias=bias)
    lin.weight.requires_grad_(weight_grad)
    x = lib.ones(4, 3, requires_grad=input_grad)
    y = lib.nn.functional.mse_loss(lin(x.relu() if input_grad else x), lib.zeros(4, 2))
    return y


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("weight_grad", [True, False])
def test_linear_next_functions_walk_like_torch(bias, input_grad, weight_grad):
    if not (bias or input_grad or weight_grad):
        pytest.skip("nothing needs a gradient")
    got = _walk(_graph(shardflow, bias, input_grad, weight_grad).grad_fn)
    want = _walk(_graph(torch, bias, input_grad, weight_grad).grad_fn)
    assert [(d, n, tuple(s) if s is not None else None) for d, n, s in got] == \
           [(d, n, tuple(s) if s is not None else None) for d, n, s in want]


def test_tutorial_chain_prints_like_torch():
    """neural_networks_tutorial: MseLoss -> Addmm -> the bias's AccumulateGrad."""
    def chain(lib):
        y = _graph(lib, True, True)
        nodes = [y.grad_fn, y.grad_fn.next_functions[0][0], y.grad_fn.next_functions[0][0].next_functions[0][0]]
        return [re.sub(r"0x[0-9a-f]+", "0x", repr(n)) for n in nodes]

    assert chain(shardflow) == chain(torch) == [
        "<MseLossBackward0 object at 0x>", "<AddmmBackward0 object at 0x>", "<AccumulateGrad object at 0x>"]


def test_the_weight_leaf_is_behind_the_transpose_node():
    lin = shardflow.nn.Linear(3, 2)
    y = lin(shardflow.ones(1, 3))
    bias_node, x_edge, (t_node, nr) = y.grad_fn.next_functions
    assert bias_node[0].variable is lin.bias and x_edge == (None, 0) and nr == 0
    assert t_node.name() == "TBackward0" and t_node.next_functions[0][0].variable is lin.weight
