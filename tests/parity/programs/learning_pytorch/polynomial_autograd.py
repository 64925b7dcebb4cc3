# ruff: noqa: I001  (the tutorial's own import order, kept)
# pytorch/tutorials beginner_source/examples_autograd/polynomial_autograd.py at commit
# 02e5a75dc17eec70591fbfc71b6e53b390083c3a (BSD-3-Clause): the cubic fitted to sin(x) with
# autograd (torch.accelerator, set_default_device, leaf updates under no_grad). Changes, and
# only these: 200 steps instead of 2000, the loss printed every 10 steps instead of every
# 100, the tutorial's long comments shortened, and the gradients reset with the file's own
# commented-out `a.grad = None` lines instead of `a.grad, b.grad, c.grad, d.grad = 0., 0.,
# 0., 0.`, which PyTorch 2.13 refuses (TypeError: assigned grad expected to be a Tensor or
# None; shardflow refuses it alike, tested in tests/autograd/test_grad_assignment.py).
"""
PyTorch: Tensors and autograd
-------------------------------

A third order polynomial, trained to predict :math:`y=\\sin(x)` from :math:`-\\pi`
to :math:`\\pi` by minimizing squared Euclidean distance.
"""
import torch
import math

# We want to be able to train our model on an accelerator such as CUDA, MPS, MTIA, or XPU.
# If the current accelerator is available, we will use it. Otherwise, we use the CPU.

dtype = torch.float
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")
torch.set_default_device(device)

# Create Tensors to hold input and outputs.
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

# Create random Tensors for weights. For a third order polynomial, we need
# 4 weights: y = a + b x + c x^2 + d x^3
a = torch.randn((), dtype=dtype, requires_grad=True)
b = torch.randn((), dtype=dtype, requires_grad=True)
c = torch.randn((), dtype=dtype, requires_grad=True)
d = torch.randn((), dtype=dtype, requires_grad=True)

learning_rate = 1e-6
for t in range(200):
    # Forward pass: compute predicted y using operations on Tensors.
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    # Compute and print loss using operations on Tensors.
    loss = (y_pred - y).pow(2).sum()
    if t % 10 == 9:
        print(t, loss.item())

    # Use autograd to compute the backward pass.
    loss.backward()

    # Manually update weights using gradient descent.
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        # Manually zero the gradients after updating weights
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
