# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/tensorboard_with_pytorch.py (BSD-3-Clause),
# stored commit 0e944af. The recipe is reStructuredText around ``.. code:: python`` blocks
# (not runnable as a file): this is its three code blocks in order, and the shell lines
# (pip install, tensorboard --logdir) left out. Nothing else changed; it runs as a script
# (the writer logs to ./runs/).
"""
How to use TensorBoard with PyTorch
===================================
"""

import torch
from torch.utils.tensorboard import SummaryWriter
writer = SummaryWriter()

x = torch.arange(-5, 5, 0.1).view(-1, 1)
y = -5 * x + 0.1 * torch.randn(x.size())

model = torch.nn.Linear(1, 1)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr = 0.1)

def train_model(iter):
    for epoch in range(iter):
        y1 = model(x)
        loss = criterion(y1, y)
        writer.add_scalar("Loss/train", loss, epoch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
train_model(10)
writer.flush()

writer.close()
