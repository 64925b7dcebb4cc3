# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/swap_tensors.py (BSD-3-Clause), stored commit
# 102956f. Changed: the prose is cut; only its first two sections are here
# (``torch.utils.swap_tensors`` of two tensors, and a module parameter replaced out of place
# while the optimizer keeps the old one): the rest builds a ``__torch_dispatch__`` wrapper
# subclass (``torch.Tensor._make_wrapper_subclass``, ``torch.ops.aten``), which shardflow
# does not have. Nothing else; it runs as a script.
"""
Extension points in ``nn.Module`` for ``load_state_dict`` and tensor subclasses
===============================================================================
"""

import torch
import torch.nn as nn
t1 = torch.arange(2)
t2 = torch.arange(3)
print(f"Before swapping, t1: {t1}, t2: {t2}")
torch.utils.swap_tensors(t1, t2)
print(f"After swapping, t1: {t1}, t2: {t2}")

################################################################################
# Application to ``nn.Module``

mod = torch.nn.Linear(1, 2, bias=False)
optimizer = torch.optim.SGD(mod.parameters())
print(f"weight in mod: {mod.weight}")
print(f"weight in optimizer: {optimizer.param_groups[0]['params']}")
mod.weight = torch.nn.Parameter(2 * mod.weight)
print(f"weight in mod: {mod.weight}")
print(f"weight in optimizer: {optimizer.param_groups[0]['params']}")
