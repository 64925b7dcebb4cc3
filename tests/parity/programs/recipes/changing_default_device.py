# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/changing_default_device.py (BSD-3-Clause), stored
# commit 0a65923. Changed: the prose is cut; the two sections that switch to ``'cuda'``
# (``with torch.device('cuda'):`` and ``torch.set_default_device('cuda')``) use ``'meta'``:
# on a machine without CUDA torch raises there (AssertionError "Torch not compiled with
# CUDA enabled"; shardflow too, the test checks it); the meta device shows the same
# defaulting without a GPU. Nothing else; it runs as a script.
"""
Changing default device
=======================
"""
import torch

USE_CUDA = False

mod = torch.nn.Linear(20, 30)
if USE_CUDA:
    mod.cuda()

device = 'cpu'
if USE_CUDA:
    device = 'cuda'
inp = torch.randn(128, 20, device=device)
print(mod(inp).device)

# PyTorch now also has a context manager which can take care of the
# device transfer automatically. Here is an example:

with torch.device('meta'):
    mod = torch.nn.Linear(20, 30)
    print(mod.weight.device)
    print(mod(torch.randn(128, 20)).device)

# You can also set it globally like this:

torch.set_default_device('meta')

mod = torch.nn.Linear(20, 30)
print(mod.weight.device)
print(mod(torch.randn(128, 20)).device)
