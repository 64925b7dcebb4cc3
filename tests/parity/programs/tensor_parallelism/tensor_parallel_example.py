# ruff: noqa: I001, F401, E251, E231, E225, F541, UP008, E402  (the example's own style kept)
# PyTorch's examples/distributed/tensor_parallelism/tensor_parallel_example.py
# (github.com/pytorch/examples at 242c328, BSD-3-Clause): a ToyModel (Linear, ReLU,
# Linear) made tensor parallel with parallelize_module (ColwiseParallel, RowwiseParallel)
# over init_device_mesh of WORLD_SIZE ranks, AdamW, 10 iterations of output.sum() on
# torch.manual_seed(i) inputs. Run with torchrun (torch) or `shardflow run -n 2` (its
# imports changed). Changes, and only these: device "cpu" for "cuda" (init_device_mesh,
# `.to`, the input); the model starts from "init.pt" (the line after ToyModel(): both
# libraries then hold the same weights); each iteration's loss is printed by every rank
# (the `print` after `output.sum()`), 4 iterations for 10.
import os
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch.distributed._tensor.device_mesh import init_device_mesh
from torch.distributed._tensor import DeviceMesh

from torch.distributed.tensor.parallel import (
    parallelize_module,
    ColwiseParallel,
    RowwiseParallel,
)

import logging

logging.basicConfig(format='%(asctime)s %(message)s', datefmt='%m/%d/%Y %I:%M:%S %p', level=logging.INFO)
logger = logging.getLogger(__name__)


"""
This is the script to test Tensor Parallel(TP) on a toy model in a
Megetron-LM SPMD style. We show an E2E working flow from forward,
backward and optimization.
(The rest of the original's description of TP is left out here.)
"""


class ToyModel(nn.Module):
    """ MLP based model """
    def __init__(self):
        super(ToyModel, self).__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))

"""
Main body of the demo of a basic version of tensor parallel by using
PyTorch native APIs.
"""

# create a device mesh based on the given world_size.
_world_size = int(os.environ["WORLD_SIZE"])

device_mesh = init_device_mesh(device_type = "cpu",mesh_shape = (_world_size,))
_rank = device_mesh.get_rank()

def rank_log(msg):
    """helper function to print only on global rank 0"""
    if _rank==0:
        logger.info(f"  {msg}")

print(f"Starting PyTorch TP example on rank {_rank}.")
assert _world_size % 2 == 0, f"TP examples require even number of GPUs, but got {_world_size} gpus"

rank_log(f"Device Mesh created: {device_mesh=}")

# create model and move it to GPU - init"cuda"_mesh has already mapped GPU ids.
tp_model = ToyModel().to("cpu")
tp_model.load_state_dict(torch.load("init.pt"))

# Create an optimizer for the parallelized module.
lr = 0.25
optimizer = torch.optim.AdamW(tp_model.parameters(), lr=lr, foreach=True)

# Custom parallelization plan for the model
tp_model = parallelize_module(module = tp_model,
                                device_mesh = device_mesh,
                                parallelize_plan = {
                                    "in_proj": ColwiseParallel(),
                                    "out_proj": RowwiseParallel(),
                                },
)
# Perform a num of iterations of forward/backward
# and optimizations for the sharded module.
num_iters = 4
rank_log(f"Tensor Parallel training starting...")

for i in range(num_iters):
    # For TP, input needs to be same across all TP ranks.
    # Setting the random seed is to mimic the behavior of dataloader.
    torch.manual_seed(i)
    inp = torch.rand(20, 10, device="cpu")
    output = tp_model(inp)
    output.sum().backward()
    print(f"rank {_rank} iter {i} loss {output.sum().item()!r}")
    optimizer.step()
    rank_log(f"Tensor Parallel iter {i} completed")

rank_log(f"Tensor Parallel training completed!")
