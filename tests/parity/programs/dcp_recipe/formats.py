# ruff: noqa: I001, F401  (the recipe's own style kept)
# PyTorch's recipe "Getting Started with Distributed Checkpoint (DCP)" (pytorch/tutorials,
# recipes_source/distributed_checkpoint_recipe.rst at 0e52e07, BSD-3-Clause), its "Formats"
# program: torch.distributed.checkpoint.format_utils' dcp_to_torch_save of the checkpoint
# save.py wrote into one torch.save file. Its second call, meant as the way back
# ("converts the torch.save model back to DCP"), calls dcp_to_torch_save again with the
# torch.save file as the DCP directory: torch fails there (a file is not a checkpoint
# directory), and so must shardflow. Changes, and only these: `python formats.py back`
# (added) calls torch_save_to_dcp for that second step, as the comment means.
import os
import sys

import torch
import torch.distributed.checkpoint as DCP
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

CHECKPOINT_DIR = "checkpoint"
TORCH_SAVE_CHECKPOINT_DIR = "torch_save_checkpoint.pth"

# convert dcp model to torch.save (assumes checkpoint was generated as above)
dcp_to_torch_save(CHECKPOINT_DIR, TORCH_SAVE_CHECKPOINT_DIR)

# converts the torch.save model back to DCP
if "back" in sys.argv[1:]:
    torch_save_to_dcp(TORCH_SAVE_CHECKPOINT_DIR, f"{CHECKPOINT_DIR}_new")
else:
    dcp_to_torch_save(TORCH_SAVE_CHECKPOINT_DIR, f"{CHECKPOINT_DIR}_new")
