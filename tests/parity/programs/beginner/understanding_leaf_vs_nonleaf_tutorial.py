# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials beginner_source/understanding_leaf_vs_nonleaf_tutorial.py (BSD-3-Clause;
# author Justin Silver), stored commit 166b898. Changed: the prose is cut to the section
# titles. Nothing else; it runs as a script.
"""
Understanding requires_grad, retain_grad, Leaf, and Non-leaf Tensors
====================================================================
"""

import torch
import torch.nn.functional as F

# tensor setup
x = torch.ones(1, 3)                      # input with shape: (1, 3)
W = torch.ones(3, 2, requires_grad=True)  # weights with shape: (3, 2)
b = torch.ones(1, 2, requires_grad=True)  # bias with shape: (1, 2)
y = torch.ones(1, 2)                      # output with shape: (1, 2)

# forward pass
z = (x @ W) + b                           # pre-activation with shape: (1, 2)
y_pred = F.relu(z)                        # activation with shape: (1, 2)
loss = F.mse_loss(y_pred, y)              # scalar loss

# Leaf vs. non-leaf tensors

# prints True because new tensors are leafs by convention
print(f"{x.is_leaf=}")

# prints False because tensor is the result of an operation with at
# least one input having requires_grad=True
print(f"{z.is_leaf=}")

# ``requires_grad``

print(f"{x.requires_grad=}") # prints False because requires_grad=False by default
print(f"{W.requires_grad=}") # prints True because we set requires_grad=True in constructor
print(f"{z.requires_grad=}") # prints True because tensor is a non-leaf node

# ``retain_grad``

loss.backward()

print(f"{W.grad=}")
print(f"{b.grad=}")

# prints all None because requires_grad=False
print(f"{x.grad=}")
print(f"{y.grad=}")

print(f"{z.grad=}")

# we have to re-run the forward pass
z = (x @ W) + b
y_pred = F.relu(z)
loss = F.mse_loss(y_pred, y)

# tell PyTorch to store the gradients after backward()
z.retain_grad()
y_pred.retain_grad()
loss.retain_grad()

# have to zero out gradients otherwise they would accumulate
W.grad = None
b.grad = None

# backpropagation
loss.backward()

# print gradients for all tensors that have requires_grad=True
print(f"{W.grad=}")
print(f"{b.grad=}")
print(f"{z.grad=}")
print(f"{y_pred.grad=}")
print(f"{loss.grad=}")
