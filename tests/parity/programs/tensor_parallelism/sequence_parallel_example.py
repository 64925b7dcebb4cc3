# ruff: noqa: I001, F401, E251, E231, E225, F541  (the example's own style kept)
# PyTorch's examples/distributed/tensor_parallelism/sequence_parallel_example.py
# (github.com/pytorch/examples at 242c328, BSD-3-Clause): the ToyModel made sequence
# parallel with parallelize_module (ColwiseParallel(input_layouts=Shard(0)),
# RowwiseParallel(output_layouts=Shard(0))) over init_device_mesh of WORLD_SIZE ranks,
# AdamW made after it, 10 iterations of output.sum() on each rank's own torch.rand input.
# Run with torchrun (torch) or `shardflow run -n 2` (its imports changed). Changes, and only
# these: device "cpu" for "cuda" (init_device_mesh, `.to`, the input); the model starts from
# "init.pt" (the line after ToyModel()); each iteration's loss is printed by every rank (the
# `print` after `output.sum()`), 4 iterations for 10.
import os
import torch
import torch.nn as nn
import torch.nn.functional as F
import logging

from torch.distributed._tensor.device_mesh import init_device_mesh
from torch.distributed._tensor import DeviceMesh, Shard

from torch.distributed.tensor.parallel import (
    parallelize_module,
    ColwiseParallel,
    RowwiseParallel,
)


logging.basicConfig(format='%(asctime)s %(message)s', datefmt='%m/%d/%Y %I:%M:%S %p', level=logging.INFO)
logger = logging.getLogger(__name__)


"""
This is the script to test Sequence Parallel(SP) on a toy model in a
Megetron-LM SPMD style. We show an E2E working flow from forward,
backward and optimization.
(The rest of the original's description of SP is left out here.)
"""

class ToyModel(nn.Module):
    """ MLP based model """
    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))


"""
Main body of the demo of a basic version of sequence parallel by using
PyTorch native APIs.
"""

# create a device mesh based on the given world_size.
device_mesh = init_device_mesh(device_type = "cpu",mesh_shape = (int(os.environ["WORLD_SIZE"]),))

_rank = device_mesh.get_rank()

def rank_log(msg):
    """helper function to log only on global rank 0"""
    if _rank==0:
        logger.info(f" {msg}")

print(f"Starting PyTorch Sequence Parallel example on rank {_rank}.")

rank_log(f"Device Mesh created: {device_mesh=}")

# create model and move it to GPU.  Init_device_mesh has already assigned gpu ids...
model = ToyModel().to("cpu")
model.load_state_dict(torch.load("init.pt"))

# Custom parallelization plan for the model
sp_model = parallelize_module(module = model,
                                device_mesh = device_mesh,
                                parallelize_plan = {
                                    "in_proj": ColwiseParallel(input_layouts=Shard(0)),
                                    "out_proj": RowwiseParallel(output_layouts=Shard(0)),
                                },
)


# Create a optimizer for the parallelized module.
lr = 0.25
optimizer = torch.optim.AdamW(sp_model.parameters(), lr=lr, foreach=True)


# Perform a num of iterations of forward/backward
# and optimizations for the sharded module.
num_iters = 4
rank_log(f"Sequence Parallel training starting...")

for i in range(num_iters):
    # For SP, input can be different across all ranks.
    inp = torch.rand(20, 10,device="cpu")
    output = sp_model(inp)
    output.sum().backward()
    print(f"rank {_rank} iter {i} loss {output.sum().item()!r}")
    optimizer.step()
    rank_log(f"Sequence Parallel iter {i} completed")

rank_log(f"Sequence Parallel training completed!")
