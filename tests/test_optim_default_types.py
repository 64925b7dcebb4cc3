"""Optimizer defaults are torch's literals: ``SGD(momentum=0, dampening=0, weight_decay=0)``,
``Adam(weight_decay=0)``, ``Adagrad``'s and ``RMSprop``'s zeros are ints in torch, and
``print(optimizer)`` shows them (``dampening: 0``). shardflow's were ``0.0``, so the printed
optimizer of the beginner tutorials read ``dampening: 0.0`` where torch's reads ``0``."""

import inspect

import pytest
import torch

import shardflow


def _optimizer_classes():
    for name in dir(torch.optim):
        cls = getattr(torch.optim, name)
        if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and cls is not torch.optim.Optimizer:
            yield name


@pytest.mark.parametrize("name", list(_optimizer_classes()))
def test_constructor_defaults_have_torch_types(name):
    sf_cls = getattr(shardflow.optim, name)
    theirs = inspect.signature(getattr(torch.optim, name).__init__).parameters
    ours = inspect.signature(sf_cls.__init__).parameters
    for key, param in theirs.items():
        if key in ours and param.default is not inspect.Parameter.empty:
            got = ours[key].default
            assert type(got) is type(param.default) and got == param.default, (name, key, got, param.default)


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("SGD", {"lr": 0.01}), ("Adam", {}), ("AdamW", {}),
    ("Adagrad", {}), ("RMSprop", {}),
])
def test_printed_optimizer_like_torch(name, kwargs):
    th_model, sf_model = torch.nn.Linear(2, 1), shardflow.nn.Linear(2, 1)
    want = repr(getattr(torch.optim, name)(th_model.parameters(), **kwargs))
    got = repr(getattr(shardflow.optim, name)(sf_model.parameters(), **kwargs))
    assert got == want
