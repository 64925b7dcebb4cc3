# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials beginner_source/basics/transforms_tutorial.py (BSD-3-Clause), stored
# commit 2aabe77. Changed: the prose is shortened to the section titles; the torchvision it
# imports is the parity tests' stand-in (synthetic FashionMNIST). Nothing else; it runs as a
# script (the test then reads samples of its `ds` and calls its `target_transform`).
"""
Transforms
===================
"""

import torch
from torchvision import datasets
from torchvision.transforms import ToTensor, Lambda

ds = datasets.FashionMNIST(
    root="data",
    train=True,
    download=True,
    transform=ToTensor(),
    target_transform=Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))
)

##############################################
# Lambda Transforms

target_transform = Lambda(lambda y: torch.zeros(
    10, dtype=torch.float).scatter_(dim=0, index=torch.tensor(y), value=1))
