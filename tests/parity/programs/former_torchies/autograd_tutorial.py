# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials beginner_source/former_torchies/autograd_tutorial.py (BSD-3-Clause),
# stored commit 6d0edbb: "Autograd" for former Torch users. Changed: the prose is cut.
# Nothing else; it runs as a script.
"""
Autograd
========
"""

import torch
x = torch.ones(2, 2, requires_grad=True)
print(x)

print(x.data)

print(x.grad)

print(x.grad_fn)  # we've created x ourselves

y = x + 2
print(y)

print(y.grad_fn)

z = y * y * 3
out = z.mean()

print(z, out)

a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a = a.to(requires_grad=True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

# Gradients

out.backward()
print(x.grad)


x = torch.ones(2, 2, requires_grad=True)
y = x + 2
y.backward(torch.ones(2, 2), retain_graph=True)
# the retain_variables flag will prevent the internal buffers from being freed
print(x.grad)

z = y * y
print(z)

# just backprop random gradients

gradient = torch.randn(2, 2)

# this would fail if we didn't specify
# that we want to retain variables
y.backward(gradient)

print(x.grad)

print(x.requires_grad)
print((x ** 2).requires_grad)

with torch.no_grad():
	print((x ** 2).requires_grad)
