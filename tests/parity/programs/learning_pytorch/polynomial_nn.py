# ruff: noqa: I001  (the tutorial's own import order, kept)
# pytorch/tutorials beginner_source/examples_nn/polynomial_nn.py at commit
# 02d7694195db7543ff85fd72177d1f1adca7784a (BSD-3-Clause): the cubic fitted to sin(x) as
# nn.Sequential(Linear(3, 1), Flatten(0, 1)) on x.unsqueeze(-1).pow(p), MSELoss(sum),
# model.zero_grad() and a manual SGD step over model.parameters(). Changes, and only these:
# 200 steps instead of 2000, the loss printed every 10 steps instead of every 100, the
# tutorial's long comments shortened.
# -*- coding: utf-8 -*-
"""
PyTorch: nn
-----------

A third order polynomial, trained to predict :math:`y=\\sin(x)` from :math:`-\\pi`
to :math:`pi` by minimizing squared Euclidean distance, with the nn package.
"""
import torch
import math


# Create Tensors to hold input and outputs.
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

# Prepare the tensor (x, x^2, x^3).
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

# Use the nn package to define our model as a sequence of layers.
model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)

loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-6
for t in range(200):

    # Forward pass: compute predicted y by passing x to the model.
    y_pred = model(xx)

    # Compute and print loss.
    loss = loss_fn(y_pred, y)
    if t % 10 == 9:
        print(t, loss.item())

    # Zero the gradients before running the backward pass.
    model.zero_grad()

    # Backward pass.
    loss.backward()

    # Update the weights using gradient descent.
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

# You can access the first layer of `model` like accessing the first item of a list
linear_layer = model[0]

# For linear layer, its parameters are stored as `weight` and `bias`.
print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + {linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
