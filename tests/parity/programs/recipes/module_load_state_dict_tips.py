# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/module_load_state_dict_tips.py (BSD-3-Clause),
# stored commit 06059c5. Changed: the prose is cut to short comments (the commented-out
# example routine is left out). Nothing else; it runs as a script (checkpoint.pth is written
# to the working directory).
"""
Tips for Loading an `nn.Module` from a Checkpoint
=================================================
"""

import torch
from torch import nn

class SomeModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(1, 1) for i in range(10)])

    def forward(self, x):
        return self.linears(x)


m = SomeModule()
torch.save(m.state_dict(), 'checkpoint.pth')
state_dict = torch.load('checkpoint.pth', mmap=True)
with torch.device('meta'):
  meta_m = SomeModule()
meta_m.load_state_dict(state_dict, assign=True)

###############################################################################
# Taking a step back, let us inspect the following more vanilla code snippet
# that does not use any of the features listed above

state_dict = torch.load('checkpoint.pth')
m = SomeModule()
m.load_state_dict(state_dict)

state_dict = torch.load('checkpoint.pth')

state_dict = torch.load('checkpoint.pth', mmap=True)

# Next, we consider the creation of the module.

m = SomeModule()

with torch.device('meta'):
  meta_m = SomeModule()

m.load_state_dict(state_dict)

meta_m.load_state_dict(state_dict, assign=True)
