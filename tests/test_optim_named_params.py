"""Optimizers built from ``model.named_parameters()`` (torch >= 2.6): the names are kept in
each group's ``param_names`` and in ``state_dict``, mixing named and unnamed groups is
torch's ValueError (they were refused: "can only optimize Tensors, but one of the params is
tuple")."""
import pytest
import torch

import shardflow as sf


def _run(lib, opt_cls):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    opt = getattr(lib.optim, opt_cls)(m.named_parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        m(lib.ones(4, 3)).pow(2).mean().backward()
        opt.step()
    sd = opt.state_dict()
    again = getattr(lib.optim, opt_cls)(m.named_parameters(), lr=0.5)
    again.load_state_dict(sd)
    return (sd["param_groups"][0]["param_names"], sorted(sd["state"]), again.param_groups[0]["lr"],
            [round(v, 6) for v in m.weight.detach().flatten().tolist()])


@pytest.mark.parametrize("opt_cls", ["SGD", "Adam", "AdamW"])
def test_named_parameters_as_torch(opt_cls):
    assert _run(sf, opt_cls) == _run(torch, opt_cls)


@pytest.mark.parametrize("case", ["partly named", "unnamed group after named"])
def test_mixed_names_raise_as_torch(case):
    def attempt(lib):
        m = lib.nn.Linear(2, 1)
        if case == "partly named":
            lib.optim.SGD([("w", m.weight), m.bias], lr=0.1)
        else:
            opt = lib.optim.SGD([("w", m.weight)], lr=0.1)
            opt.add_param_group({"params": [m.bias]})

    with pytest.raises(ValueError) as th:
        attempt(torch)
    with pytest.raises(ValueError) as got:
        attempt(sf)
    assert str(got.value) == str(th.value)
