# ruff: noqa: I001, UP008, F401, F541  (the recipe's own style kept)
# PyTorch's recipe "Getting Started with Distributed Checkpoint (DCP)" (pytorch/tutorials,
# recipes_source/distributed_checkpoint_recipe.rst at 0e52e07, BSD-3-Clause), its
# non-distributed load: a plain ToyModel in one process (no process group: DCP runs no
# collectives), dcp.load of {"model": model.state_dict()}, then model.load_state_dict.
# As written it looks for "model.net1.weight" in a checkpoint that save.py wrote under
# "app" (torch fails: "Missing key in checkpoint state_dict: model.net1.weight.", and so
# must shardflow). Changes, and only these: `python load_single.py app` (added) loads
# {"app": {"model": model.state_dict()}} instead, the key save.py wrote (the optimizer's
# entries are left in the checkpoint: DefaultLoadPlanner(allow_partial_load=True)), and the
# loaded model's parameters are written to "single.json" (added) for the comparison.
import os
import sys

import torch
import torch.distributed.checkpoint as dcp
import torch.nn as nn


CHECKPOINT_DIR = "checkpoint"


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(16, 16)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def run_checkpoint_load_example():
    # create the non FSDP-wrapped toy model
    model = ToyModel()
    state_dict = {
        "model": model.state_dict(),
    }

    if "app" in sys.argv[1:]:  # (added) the key save.py wrote
        from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner

        state_dict = {"app": state_dict}
        dcp.load(state_dict=state_dict, checkpoint_id=CHECKPOINT_DIR,
                 planner=DefaultLoadPlanner(allow_partial_load=True))
        state_dict = state_dict["app"]
    else:
        # since no progress group is initialized, DCP will disable any collectives.
        dcp.load(
            state_dict=state_dict,
            checkpoint_id=CHECKPOINT_DIR,
        )
    model.load_state_dict(state_dict["model"])
    import json  # (added) what was loaded

    with open("single.json", "w") as f:
        json.dump({k: v.tolist() for k, v in model.state_dict().items()}, f)

if __name__ == "__main__":
    print(f"Running basic DCP checkpoint loading example.")
    run_checkpoint_load_example()
