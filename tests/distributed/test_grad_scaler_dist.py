"""GradScaler under DDP: an inf on one rank makes every rank skip that step and halve its
scale (the found-inf flag is all-reduced); checked against a single-process PyTorch
GradScaler run on the same averaged gradients (computed here: the ranks do not import
PyTorch). Plus the minimum-scale error.
"""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as snn
from shardflow.testing.mpi import run_program
from tests.distributed.programs.grad_scaler_inf_on_one_rank import BAD, STEPS, batch


def torch_reference(world: int) -> dict:
    """One process, PyTorch: SGD with a GradScaler on the mean of the per-rank losses, from the
    ranks' initial parameters (seed 3), the inf injected by hand at step BAD; the scale after
    each step and the final parameters."""
    sf.manual_seed(3)
    init = snn.Linear(5, 2)
    tmodel = torch.nn.Linear(5, 2)
    with torch.no_grad():
        tmodel.weight.copy_(torch.from_numpy(init.weight.numpy().copy()))
        tmodel.bias.copy_(torch.from_numpy(init.bias.numpy().copy()))
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    scales = []
    for step in range(STEPS):
        topt.zero_grad()
        tl = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(bx)), torch.from_numpy(by))
                 for bx, by in (batch(q, step) for q in range(world))) / world
        tscaler.scale(tl).backward()
        if step == BAD:
            tmodel.weight.grad[0, 0] = float("inf")
        tscaler.step(topt)
        tscaler.update()
        scales.append(tscaler.get_scale())
    return {"world": world, "scales": np.array(scales), "weight": tmodel.weight.detach().numpy().copy(),
            "bias": tmodel.bias.detach().numpy().copy()}


@pytest.mark.mpi
def test_inf_on_one_rank_makes_every_rank_skip_and_back_off(tmp_path):
    np.savez(tmp_path / "want.npz", **torch_reference(2))
    run_program("tests.distributed.programs.grad_scaler_inf_on_one_rank", n=2, timeout=90,
                args=[str(tmp_path / "want.npz")]).check()


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
