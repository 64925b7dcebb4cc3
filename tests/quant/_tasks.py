"""Small training tasks for the quantization tests: scikit-learn's digits as 8x8 images (the
``digits`` task's data) and the same digits drawn MNIST-style (28x28: each pixel a 3x3 block,
2 pixels of border, a light blur), for LeNet-5. Float models are trained here with a fixed
seed; the tests compare their accuracy with the quantized models'."""

from __future__ import annotations

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F
from shardflow import models, optim
from shardflow.data import Digits


def digits_arrays(train: bool, mnist_style: bool = False):
    ds = Digits(train=train, seed=0)
    x = ds.data.astype(np.float32) / 255.0  # (N, 8, 8)
    if mnist_style:
        x = np.kron(x, np.ones((3, 3), np.float32))  # (N, 24, 24)
        x = np.pad(x, ((0, 0), (2, 2), (2, 2)))  # (N, 28, 28)
        k = np.array([0.25, 0.5, 0.25], np.float32)
        x = 0.25 * x + 0.75 * (np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 2, x))
    return x[:, None], ds.targets.astype(np.int64)  # (N, 1, H, W), (N,)


def make_model(kind: str, seed: int = 0):
    sf.manual_seed(seed)
    if kind == "lenet":
        return models.LeNet5(models.LeNetConfig(num_classes=10))
    return models.MLP(models.MLPConfig(in_features=64, hidden=(64, 32), num_classes=10))


def train(model, x, y, steps: int, lr: float = 3e-3, batch: int = 64, seed: int = 0):
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(steps):
        idx = rng.integers(0, len(x), batch)
        loss = F.cross_entropy(model(sf.tensor(x[idx])), sf.tensor(y[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def accuracy(model, x, y) -> float:
    model.eval()
    with sf.no_grad():
        out = model(sf.tensor(x))
    return float((out.numpy().argmax(-1) == y).mean())
