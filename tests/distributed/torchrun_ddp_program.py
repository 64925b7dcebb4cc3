"""PyTorch's DDP tutorial program for torchrun, with its imports changed to shardflow.

The original (pytorch/tutorials, intermediate_source/ddp_tutorial.rst, "Initialize DDP with
torch.distributed.run/torchrun") is started with ``torchrun --nproc-per-node=2 elastic_ddp.py``;
this one with ``shardflow run -n 2 torchrun_ddp_program.py``. What differs from the
tutorial, and why:

* imports: ``shardflow`` for ``torch`` (the point of the exercise);
* CPU only: no ``torch.cuda.set_device`` / ``.to(device_id)`` / ``device_ids`` (the rank
  still reads ``LOCAL_RANK`` from the environment, as the tutorial does);
* the backend comes from ``--backend`` (the tutorial hard-codes "nccl");
* deterministic weights and data (NumPy, seed 0; each rank takes its half of a global
  batch of 20) and 3 steps instead of 1, so a test can compare the losses with PyTorch;
* each rank prints one JSON line: the torchrun variables it saw, its loss per step and the
  final parameters.
"""

import argparse
import json
import os

import numpy as np

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.nn.parallel import DistributedDataParallel as DDP

GLOBAL_BATCH, STEPS, LR = 20, 3, 0.1


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def initial_state() -> dict:
    """The weights every run starts from (shared with the test's PyTorch reference)."""
    rng = np.random.default_rng(0)
    shapes = {"net1.weight": (10, 10), "net1.bias": (10,), "net2.weight": (5, 10), "net2.bias": (5,)}
    return {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in shapes.items()}


def global_batch(step: int):
    rng = np.random.default_rng(100 + step)
    return (rng.standard_normal((GLOBAL_BATCH, 10)).astype(np.float32),
            rng.standard_normal((GLOBAL_BATCH, 5)).astype(np.float32))


def demo_basic(backend: str):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend)
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    model = ToyModel()
    model.load_state_dict({k: torch.tensor(v) for k, v in initial_state().items()})
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=LR)
    per_rank = GLOBAL_BATCH // world_size
    losses = []
    for step in range(STEPS):
        x, y = global_batch(step)
        rows = slice(rank * per_rank, (rank + 1) * per_rank)
        optimizer.zero_grad()
        outputs = ddp_model(torch.tensor(x[rows]))
        labels = torch.tensor(y[rows])
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    env = {k: os.environ.get(k) for k in
           ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_NAME",
            "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS")}
    env["run_id"] = os.environ.get("TORCHELASTIC_RUN_ID")
    env["elastic"] = dist.is_torchelastic_launched()
    params = {k: v.numpy().tolist() for k, v in model.state_dict().items()}
    print("RESULT " + json.dumps({"rank": rank, "local_rank": local_rank, "world_size": world_size,
                                  "env": env, "losses": losses, "params": params}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="gloo")
    demo_basic(parser.parse_args().backend)
