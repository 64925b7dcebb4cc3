"""Every optimizer's default hyper-parameters as torch 2.13 keeps them, value and type:
torch writes several zeros as ``int`` (SGD's momentum, dampening, weight_decay; Adam's
weight_decay; RMSprop's momentum, weight_decay; Adagrad's lr_decay, weight_decay,
initial_accumulator_value), so ``print(optimizer)`` shows ``momentum: 0`` and the state
dict's ``param_groups`` hold ``0`` (shardflow showed ``0.0``)."""

import pytest
import torch

import shardflow as sf

NAMES = sorted(n for n in dir(torch.optim)
               if isinstance(getattr(torch.optim, n), type) and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
               and n not in ("Optimizer", "Muon"))  # Muon takes 2-D parameters only: below


@pytest.mark.parametrize("name", NAMES)
def test_param_group_defaults_and_print_match_torch(name):
    kw = {} if name in ("Adadelta", "LBFGS") else {"lr": 0.1}
    shape = (2, 2)
    th = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(shape))], **kw)
    ours = getattr(sf.optim, name)([sf.nn.Parameter(sf.zeros(shape))], **kw)
    tg = {k: v for k, v in th.param_groups[0].items() if k != "params"}
    sg = {k: v for k, v in ours.param_groups[0].items() if k != "params"}
    assert {k: repr(v) for k, v in sg.items()} == {k: repr(v) for k, v in tg.items()}
    assert repr(ours) == repr(th)


def test_muon_defaults_match_torch():
    th = torch.optim.Muon([torch.nn.Parameter(torch.zeros(2, 2))], lr=0.1)
    ours = sf.optim.Muon([sf.nn.Parameter(sf.zeros(2, 2))], lr=0.1)
    assert repr(ours) == repr(th)
