"""Train a small CNN on scikit-learn's 8x8 digits, then make it int8 three ways: dynamic
quantization, post-training static quantization (calibration) and quantization-aware
training. Written like PyTorch's eager-mode quantization tutorial; the only changes from a
PyTorch script are the imports. Runs on 2 CPU cores in about 10 seconds:

    python examples/quantize_digits.py
"""

import copy

import numpy as np

import shardflow as torch
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.ao.quantization import (
    DeQuantStub,
    QuantStub,
    convert,
    fuse_modules,
    get_default_qat_qconfig,
    get_default_qconfig,
    prepare,
    prepare_qat,
    quantize_dynamic,
)
from shardflow.utils.data import DataLoader, Digits

torch.manual_seed(0)
train_loader = DataLoader(Digits(train=True), batch_size=64, shuffle=True)
test_set = Digits(train=False)
x_test = torch.tensor(test_set.data[:, None].astype(np.float32) / 255.0)  # (N, 1, 8, 8)
y_test = torch.tensor(test_set.targets)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()  # float -> int8 here after convert
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)
        self.dequant = DeQuantStub()  # int8 -> float

    def forward(self, x):  # (B, 1, 8, 8)
        x = self.pool(self.relu1(self.conv(self.quant(x))))  # (B, 16, 4, 4)
        x = self.fc2(self.relu2(self.fc1(self.flatten(x))))  # (B, 10)
        return self.dequant(x)


def train(model, epochs, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        for x, y in train_loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def accuracy(model):
    model.eval()
    with torch.no_grad():
        return (model(x_test).argmax(-1) == y_test).float().mean().item()


def size_kb(model):
    return sum(v.numpy().nbytes for v in model.state_dict().values()) / 1024


float_model = train(Net(), epochs=8, lr=3e-3)
print(f"float32       accuracy {accuracy(float_model):.4f}  size {size_kb(float_model):6.1f} KB")

# dynamic: int8 Linear weights, activations quantized per batch
dynamic = quantize_dynamic(float_model, {nn.Linear}, dtype=torch.qint8)
print(f"dynamic int8  accuracy {accuracy(dynamic):.4f}  size {size_kb(dynamic):6.1f} KB")

# post-training static: fuse, observe 4 calibration batches, convert
m = fuse_modules(copy.deepcopy(float_model).eval(), [["conv", "relu1"], ["fc1", "relu2"]])
m.qconfig = get_default_qconfig("x86")
prepared = prepare(m)
with torch.no_grad():
    for i, (x, _) in enumerate(train_loader):
        if i == 4:
            break
        prepared(x)
static = convert(prepared)
print(f"static int8   accuracy {accuracy(static):.4f}  size {size_kb(static):6.1f} KB")

# quantization-aware training: fake-quant forward, straight-through gradients, 2 epochs
m = fuse_modules(copy.deepcopy(float_model).eval(), [["conv", "relu1"], ["fc1", "relu2"]])
m.qconfig = get_default_qat_qconfig("x86")
qat = train(prepare_qat(m.train()), epochs=2, lr=5e-4)
qat_int8 = convert(qat.eval())
print(f"QAT int8      accuracy {accuracy(qat_int8):.4f}  size {size_kb(qat_int8):6.1f} KB")
