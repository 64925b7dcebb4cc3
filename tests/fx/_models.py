"""The same small models built on torch and on shardflow (``lib`` is either), for the fx tests."""

import numpy as np


def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 8)
            self.relu = nn.ReLU()
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            return self.out(self.relu(self.linear(x)) + 1)

    return MLP()


def mixed(lib):
    """Leaf modules, parameters, buffers, torch functions, methods, attribute reads, indexing."""
    nn = lib.nn

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 3)
            self.relu = nn.ReLU()
            self.w = nn.Parameter(lib.ones(3) * 0.5)
            self.register_buffer("b", lib.full((3,), 0.25))

        def forward(self, x, y=2):
            h = self.relu(self.linear(x)) + 1
            h = lib.relu(h) * self.w + self.b
            h = h.view(-1, 3).sum(dim=1, keepdim=True)
            z = lib.tanh(h) - h / 2
            n = x.shape[0]
            return {"a": z, "b": (h, n)}

    return Mixed()


def conv_bn(lib):
    """Nested containers and a wrapped module (the conv-bn fuser tutorial's shape)."""
    nn = lib.nn

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.mod = nn.BatchNorm2d(2)

        def forward(self, x):
            return self.mod(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(2)
            self.nested = nn.Sequential(nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2))
            self.wrapped = Wrapped()

        def forward(self, x):
            x = self.bn1(self.conv1(x))
            x = self.nested(x)
            return lib.flatten(self.wrapped(x), 1)

    return Net()


def copy_weights(th_model, sf_model, sf):
    sf_model.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in th_model.state_dict().items()})


def pair(factory, sf, th):
    th.manual_seed(0)
    th_model = factory(th)
    sf_model = factory(sf)
    copy_weights(th_model, sf_model, sf)
    return th_model, sf_model


def inputs(shape, sf, th, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(x), th.tensor(x)


def functional(lib):
    """Functional calls, parameter reads used through methods (``self.w.t()``), size reads."""
    nn, F = lib.nn, lib.nn.functional

    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.fc = nn.Linear(8, 3)
            self.w = nn.Parameter(lib.ones(3, 3) * 0.1 + lib.eye(3))
            self.ln = nn.LayerNorm(3)

        def forward(self, x):
            h = F.max_pool2d(F.relu(self.conv(x)), 2)
            h = h.view(h.size(0), -1)
            h = F.linear(h, self.fc.weight, self.fc.bias)
            h = lib.matmul(h, self.w.t())
            h = F.softmax(h, dim=-1) + F.gelu(h) + lib.sigmoid(h).mean(-1, keepdim=True)
            h = self.ln(h).permute(1, 0).contiguous().transpose(0, 1)
            h = lib.stack((h, -h), 0).flatten(1)
            return F.log_softmax(h.reshape(h.shape[0], 2, -1)[:, 0, 1:], 1)

    return Functional()
