# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials beginner_source/blitz/autograd_tutorial.py, "Autograd: automatic
# differentiation", the Variable-era version (BSD-3-Clause), stored commit 56d1da9. Changed:
# the prose is shortened to the section titles. Nothing else; it runs as a script.
"""
Autograd: automatic differentiation
===================================
"""

import torch
from torch.autograd import Variable

###############################################################
# Create a variable:
x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)

###############################################################
# Do an operation of variable:
y = x + 2
print(y)

###############################################################
# ``y`` was created as a result of an operation, so it has a ``grad_fn``.
print(y.grad_fn)

###############################################################
# Do more operations on y
z = y * y * 3
out = z.mean()

print(z, out)

out.backward()

print(x.grad)

###############################################################
# You can do many crazy things with autograd!


x = torch.randn(3)
x = Variable(x, requires_grad=True)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)

gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)

print(x.grad)
