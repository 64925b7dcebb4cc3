# ruff: noqa: I001, UP008, UP009, UP010, UP032  (the tutorial's own style: its import block, super(C, self), coding line, __future__ import, str.format, kept)
# -*- coding: utf-8 -*-
# PyTorch's tutorial "Spatial Transformer Networks Tutorial" (pytorch/tutorials,
# intermediate_source/spatial_transformer_tutorial.py, BSD-3-Clause; Ghassen Hamrouni), in
# its current form as published at
# https://pytorch.org/tutorials/intermediate/spatial_transformer_tutorial.html: the stored
# repository copy (commit c53e7d4) still has `Variable(..., volatile=True)`,
# `loss.data[0]` and `.cuda()`, which PyTorch 2 refuses (a 0-dim tensor cannot be
# indexed); the published form has `.to(device)`, `loss.item()` and `torch.no_grad()`.
# The localisation net, the fc_loc regressor initialised to the identity through
# `.data` (`zero_`, `copy_`), `F.affine_grid`, `F.grid_sample`, Dropout2d, F.dropout, SGD
# and the legacy `nll_loss(..., size_average=False)` are the tutorial's. Changes, and only these:
# torchvision's MNIST (a download) became `synthetic_mnist`, random 28x28 images with
# MNIST's normalisation and labels, one batch of 16 each (batch_size 64 -> 16,
# num_workers 4 -> 0: worker processes would only add start-up time); 20 epochs -> 3; the loss is
# printed every batch (500 -> 1); matplotlib and torchvision's make_grid (visualize_stn)
# dropped; the module-level epoch loop is `main()`, which returns the printed train losses
# and (test loss, correct) per epoch (train() and test() return them).
from __future__ import print_function
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import numpy as np

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def synthetic_mnist(n, seed):
    """Random 28x28 images normalised as MNIST's transform does, and labels 0..9."""
    rng = np.random.default_rng(seed)
    images = rng.random((n, 1, 28, 28)).astype(np.float32)
    images = (images - 0.1307) / 0.3081
    labels = rng.integers(0, 10, n)
    return torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


# Training dataset
train_loader = torch.utils.data.DataLoader(
    synthetic_mnist(16, seed=0), batch_size=16, shuffle=True, num_workers=0)
# Test dataset
test_loader = torch.utils.data.DataLoader(
    synthetic_mnist(16, seed=1), batch_size=16, shuffle=True, num_workers=0)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)

        return x

    def forward(self, x):
        # transform the input
        x = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


model = Net().to(device)

optimizer = optim.SGD(model.parameters(), lr=0.01)


def train(epoch):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)

        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 1 == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            losses.append(loss.item())
    return losses
#
# A simple test procedure to measure the STN performances on MNIST.
#


def test():
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)

            # sum up batch loss
            test_loss += F.nll_loss(output, target, size_average=False).item()
            # get the index of the max log-probability
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()

        test_loss /= len(test_loader.dataset)
        print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'
              .format(test_loss, correct, len(test_loader.dataset),
                      100. * correct / len(test_loader.dataset)))
        return test_loss, correct


def main():
    train_losses, tests = [], []
    for epoch in range(1, 3 + 1):
        train_losses += train(epoch)
        tests.append(test())
    return train_losses, tests
