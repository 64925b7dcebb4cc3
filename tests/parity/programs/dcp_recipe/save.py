# ruff: noqa: I001, UP008, E201, E202, F401, F841  (the recipe's own style kept)
# PyTorch's recipe "Getting Started with Distributed Checkpoint (DCP)" (pytorch/tutorials,
# recipes_source/distributed_checkpoint_recipe.rst at 0e52e07, BSD-3-Clause), its "Saving"
# program: a ToyModel wrapped in FSDP, one Adam step of model(x).sum(), then
# dcp.save({"app": AppState(model, optimizer)}) -- the Stateful AppState calls
# get_state_dict / set_state_dict -- on processes started by mp.spawn.
# Changes, and only these: it runs on CPUs (the recipe's 8-GPU server): backend "gloo"
# for "nccl", no torch.cuda.set_device, the model stays on the CPU (no `.to(rank)`), the
# input is made on the CPU, FSDP gets device_id=torch.device("cpu") (torch's FSDP refuses a
# CPU module otherwise), and world_size is 2 (torch.cuda.device_count()); MASTER_PORT
# may come from RECIPE_PORT (so that two runs at once do not share a port); the model
# starts from the weights in "init.pt" and each rank's input is row `rank` of "inputs.pt"
# (torch.rand's streams differ between the libraries; the test writes both files).
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
import torch.nn as nn

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp.fully_sharded_data_parallel import StateDictType

CHECKPOINT_DIR = "checkpoint"


class AppState(Stateful):
    """This is a useful wrapper for checkpointing the Application State. Since this object is compliant
    with the Stateful protocol, DCP will automatically call state_dict/load_stat_dict as needed in the
    dcp.save/load APIs.

    Note: We take advantage of this wrapper to hande calling distributed state dict methods on the model
    and optimizer.
    """

    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        # this line automatically manages FSDP FQN's, as well as sets the default state dict type to FSDP.SHARDED_STATE_DICT
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {
            "model": model_state_dict,
            "optim": optimizer_state_dict
        }

    def load_state_dict(self, state_dict):
        # sets our state dicts on the model and optimizer, now that we've loaded
        set_state_dict(
            self.model,
            self.optimizer,
            model_state_dict=state_dict["model"],
            optim_state_dict=state_dict["optim"]
        )

class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(16, 16)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("RECIPE_PORT", "12355 ")

    # initialize the process group
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


def run_fsdp_checkpoint_save_example(rank, world_size):
    print(f"Running basic FSDP checkpoint saving example on rank {rank}.")
    setup(rank, world_size)

    # create a model and move it to GPU with id rank
    model = ToyModel()
    model.load_state_dict(torch.load("init.pt"))
    model = FSDP(model, device_id=torch.device("cpu"))

    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)

    optimizer.zero_grad()
    model(torch.load("inputs.pt")[rank]).sum().backward()
    optimizer.step()

    state_dict = { "app": AppState(model, optimizer) }
    dcp.save(state_dict, checkpoint_id=CHECKPOINT_DIR)

    cleanup()


if __name__ == "__main__":
    world_size = 2
    print(f"Running fsdp checkpoint example on {world_size} devices.")
    mp.spawn(
        run_fsdp_checkpoint_save_example,
        args=(world_size,),
        nprocs=world_size,
        join=True,
    )
