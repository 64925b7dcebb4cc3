# ruff: noqa: I001, F401  (the recipe's own imports kept: it imports torch.optim as optim and uses torch.optim)
"""pytorch/tutorials ``recipes_source/zero_redundancy_optimizer.rst`` (commit 01c6302): the
recipe's program (its one code block), run as ``python zero_redundancy_optimizer.py``
(``mp.spawn`` of 2 processes, twice: with ZeroRedundancyOptimizer(Adam), then with Adam).

Changed, for a CPU and for time: ``nn.Linear(16, 16)`` layers and a (20, 16) batch, not
2000-wide; no ``.to(rank)`` / ``device_ids=[rank]`` (they name CUDA device ``rank``);
MASTER_PORT is read from ``ZERO_RECIPE_PORT`` (the test's free port; 29500 as written
otherwise). ``print_peak_memory`` is as written: ``torch.cuda.max_memory_allocated`` is 0
without CUDA, in torch and in shardflow. Added ``dist.destroy_process_group()`` at the end of
``example``: without it torch 2.13's children often end in gloo's teardown abort ("terminate
called without an active exception"), which stops the program after its first ``mp.spawn``
(CI's quiet machine: three runs in a row).
"""

import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

def print_peak_memory(prefix, device):
    if device == 0:
        print(f"{prefix}: {torch.cuda.max_memory_allocated(device) // 1e6}MB ")

def example(rank, world_size, use_zero):
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = os.environ.get('ZERO_RECIPE_PORT', '29500')
    # create default process group
    dist.init_process_group("gloo", rank=rank, world_size=world_size)

    # create local model
    model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(20)])
    print_peak_memory("Max memory allocated after creating local model", rank)

    # construct DDP model
    ddp_model = DDP(model)
    print_peak_memory("Max memory allocated after creating DDP", rank)

    # define loss function and optimizer
    loss_fn = nn.MSELoss()
    if use_zero:
        optimizer = ZeroRedundancyOptimizer(
            ddp_model.parameters(),
            optimizer_class=torch.optim.Adam,
            lr=0.01
        )
    else:
        optimizer = torch.optim.Adam(ddp_model.parameters(), lr=0.01)

    # forward pass
    outputs = ddp_model(torch.randn(20, 16))
    labels = torch.randn(20, 16)
    # backward pass
    loss_fn(outputs, labels).backward()

    # update parameters
    print_peak_memory("Max memory allocated before optimizer step()", rank)
    optimizer.step()
    print_peak_memory("Max memory allocated after optimizer step()", rank)

    print(f"params sum is: {sum(model.parameters()).sum()}")
    dist.destroy_process_group()  # added: torch 2.13's gloo aborts at exit without it (see header)



def main():
    world_size = 2
    print("=== Using ZeroRedundancyOptimizer ===")
    mp.spawn(example,
        args=(world_size, True),
        nprocs=world_size,
        join=True)

    print("=== Not Using ZeroRedundancyOptimizer ===")
    mp.spawn(example,
        args=(world_size, False),
        nprocs=world_size,
        join=True)

if __name__=="__main__":
    main()
