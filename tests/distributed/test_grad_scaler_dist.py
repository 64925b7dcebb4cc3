"""GradScaler under DDP: an inf on one rank makes every rank skip that step and halve its
scale (the found-inf flag is all-reduced); checked against a single-process PyTorch
GradScaler run on the same averaged gradients. Plus the minimum-scale error.
"""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as snn
from shardflow.testing.mpi import run_program


@pytest.mark.mpi
def test_inf_on_one_rank_makes_every_rank_skip_and_back_off():
    run_program("tests.distributed.programs.grad_scaler_inf_on_one_rank", n=2, timeout=90).check()


def _nan_step(scaler, model, opt):
    opt.zero_grad()
    loss = model(sf.ones(1, 2)).sum() * float("nan")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def test_min_scale_raises_before_changing_the_scale():
    model = snn.Linear(2, 1)
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    scaler = sf.amp.GradScaler("cpu", init_scale=4.0, min_scale=1.0)
    _nan_step(scaler, model, opt)  # 4 -> 2
    _nan_step(scaler, model, opt)  # 2 -> 1
    with pytest.raises(RuntimeError, match=r"below min_scale=1.*3 skipped steps in a row.*bfloat16"):
        _nan_step(scaler, model, opt)
    assert scaler.get_scale() == 1.0
    # without a floor: PyTorch's behaviour, the scale keeps halving
    free = sf.amp.GradScaler("cpu", init_scale=1.0, min_scale=None)
    ref = torch.amp.GradScaler("cpu", init_scale=1.0)
    tmodel = torch.nn.Linear(2, 1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    for _ in range(3):
        _nan_step(free, model, opt)
        topt.zero_grad()
        ref.scale(tmodel(torch.ones(1, 2)).sum() * float("nan")).backward()
        ref.step(topt)
        ref.update()
    assert free.get_scale() == ref.get_scale() == 0.125


def test_defaults_are_torchs():
    s, t = sf.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    assert s.get_scale() == t.get_scale() == 2.0**16
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (
        t.get_growth_factor(), t.get_backoff_factor(), t.get_growth_interval()) == (2.0, 0.5, 2000)
    assert np.isclose(2.0**-24, np.finfo(np.float16).smallest_subnormal)
