"""``print(optimizer)`` and its param groups show the defaults as PyTorch's do: ``0`` where
torch's signature defaults are the int 0 (``weight_decay: 0`` in SGD, Adam, Adagrad,
RMSprop; SGD's momentum/dampening; Adagrad's lr_decay/initial_accumulator_value; RMSprop's
momentum), not ``0.0``. Found printing the yunjey tutorials' optimizers."""

import pytest
import torch

import shardflow

NAMES = ["SGD", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSprop", "NAdam", "RAdam", "ASGD", "Rprop"]


@pytest.mark.parametrize("name", NAMES)
def test_optimizer_prints_like_torch(name):
    th = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], lr=0.1)
    sf = getattr(shardflow.optim, name)([shardflow.zeros(2, requires_grad=True)], lr=0.1)
    assert str(sf).replace("shardflow", "torch") == str(th)
    th_group = {k: v for k, v in th.param_groups[0].items() if k != "params"}
    sf_group = {k: v for k, v in sf.param_groups[0].items() if k != "params"}
    assert {k: type(v) for k, v in sf_group.items()} == {k: type(v) for k, v in th_group.items()}


def test_int_defaults_still_step_in_float32():
    p = shardflow.ones(3, requires_grad=True)
    opt = shardflow.optim.SGD([p], lr=0.5)
    p.sum().backward()
    opt.step()
    assert p.dtype == shardflow.float32 and p.tolist() == [0.5, 0.5, 0.5]
