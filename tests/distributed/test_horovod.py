"""The Horovod-style API on real ranks: collectives vs NumPy, DistributedOptimizer vs PyTorch.

One launch on 3 ranks (uneven all-gather, broadcast from the last rank) runs every optimizer
configuration; PyTorch's reference is computed here, so the ranks do not import PyTorch."""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn
from shardflow.testing.mpi import run_program
from tests.distributed.programs.horovod_api_and_optimizer import data

pytestmark = pytest.mark.mpi

WORLD = 3
RUNS = ["none:1", "fp16:1", "none:2"]  # COMPRESSION:BACKWARD_PASSES_PER_STEP


def torch_reference(world: int, passes: int) -> list:
    """PyTorch's SGD (momentum 0.9) for 3 steps on the mean loss over every rank's batches
    (``passes`` of them per step), from the ranks' initial parameters (rank 0's: seed 5)."""
    sf.manual_seed(5)
    init = [p.numpy().copy() for p in nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).parameters()]
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2))
    with torch.no_grad():
        for p, q in zip(init, tmodel.parameters()):
            q.copy_(torch.from_numpy(p))
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        tloss = 0
        for m in range(passes):
            for k in range(world):
                xk = data(k, 10 + 10 * step + m, (4, 5))
                yk = data(k, 50 + 10 * step + m, (4, 2))
                tloss = tloss + torch.nn.functional.mse_loss(tmodel(torch.from_numpy(xk)),
                                                             torch.from_numpy(yk)) / world
        topt.zero_grad()
        tloss.backward()
        topt.step()
    return [q.detach().numpy().copy() for q in tmodel.parameters()]


def test_horovod_api_and_optimizer(tmp_path):
    """Each run: a fresh model and DistributedOptimizer (the failing one is named)."""
    wants = {}
    for run in RUNS:
        for i, q in enumerate(torch_reference(WORLD, int(run.split(":")[1]))):
            wants[f"{run}/{i}"] = q
    np.savez(tmp_path / "want.npz", **wants)
    run_program("tests.distributed.programs.horovod_api_and_optimizer", n=WORLD, timeout=90,
                args=[str(tmp_path / "want.npz"), *RUNS]).check()
