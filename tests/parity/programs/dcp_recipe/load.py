# ruff: noqa: I001, UP008, E201, E202, F401, F841  (the recipe's own style kept)
# PyTorch's recipe "Getting Started with Distributed Checkpoint (DCP)" (pytorch/tutorials,
# recipes_source/distributed_checkpoint_recipe.rst at 0e52e07, BSD-3-Clause), its "Loading"
# program: the same FSDP-wrapped ToyModel and Adam, get_state_dict to make the state dict
# DCP loads into, dcp.load(state_dict=..., checkpoint_id=CHECKPOINT_DIR) on processes
# started by mp.spawn. Changes, and only these (the same as save.py's): CPUs ("gloo", no
# set_device, no `.to(rank)`, FSDP's device_id=torch.device("cpu"): torch's FSDP refuses a
# CPU module otherwise), world_size 2, RECIPE_PORT, the model from "init.pt" (the loaded
# values must replace it); and, to show what was loaded, `report` (added) writes each
# rank's whole model and optimizer state after the load. As written, the program loads
# {"model": ..., "optimizer": ...} from the checkpoint save.py wrote under "app": torch
# itself fails ("Missing key in checkpoint state_dict: model.net1.weight."), and so must
# shardflow; `python load.py app` (added) loads {"app": AppState(model, optimizer)}, as
# later versions of the recipe do, and `python load.py app fsdp2` (added) does so into a
# model wrapped with FSDP2's fully_shard (those versions' wrapper) from the FSDP1 checkpoint.
import os
import sys

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


def report(rank, model, optimizer):
    """(Added) what the load left in the model and optimizer, whole, in "loaded_<rank>.json"."""
    import json
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    msd, osd = get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True))
    plain = lambda v: v.tolist() if isinstance(v, torch.Tensor) else v
    out = {"model": {k: plain(v) for k, v in msd.items()},
           "optim": {k: {n: plain(t) for n, t in s.items()} for k, s in osd["state"].items()}}
    with open(f"loaded_{rank}.json", "w") as f:
        json.dump(out, f)


def run_fsdp_checkpoint_load_example(rank, world_size):
    print(f"Running basic FSDP checkpoint loading example on rank {rank}.")
    setup(rank, world_size)

    # create a model and move it to GPU with id rank
    model = ToyModel()
    model.load_state_dict(torch.load("init.pt"))
    if "fsdp2" in sys.argv[1:]:  # (added) FSDP2's fully_shard, as later versions of the recipe
        from torch.distributed.fsdp import fully_shard

        model = fully_shard(model)
    else:
        model = FSDP(model, device_id=torch.device("cpu"))

    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)

    state_dict = { "app": AppState(model, optimizer)}
    if "app" in sys.argv[1:]:  # (added) the recipe's later form: load through AppState
        dcp.load(state_dict=state_dict, checkpoint_id=CHECKPOINT_DIR)
        report(rank, model, optimizer)
        cleanup()
        return
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    # generates the state dict we will load into
    model_state_dict, optimizer_state_dict = get_state_dict(model, optimizer)
    state_dict = {
        "model": model_state_dict,
        "optimizer": optimizer_state_dict
    }
    dcp.load(
        state_dict=state_dict,
        checkpoint_id=CHECKPOINT_DIR,
    )
    report(rank, model, optimizer)

    cleanup()


if __name__ == "__main__":
    world_size = 2
    print(f"Running fsdp checkpoint example on {world_size} devices.")
    mp.spawn(
        run_fsdp_checkpoint_load_example,
        args=(world_size,),
        nprocs=world_size,
        join=True,
    )
