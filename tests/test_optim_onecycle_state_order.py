"""OneCycleLR's ``state_dict()`` lists its entries in torch's order (``total_steps``,
``_schedule_phases``, ``_anneal_func_type``, ...): programs print it and save it."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("three_phase", [False, True])
def test_onecycle_state_dict_keys_in_torch_order(three_phase):
    keys = []
    for lib in (torch, shardflow):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1, momentum=0.9)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=8, three_phase=three_phase)
        keys.append(list(sched.state_dict()))
    assert keys[1] == keys[0]
