"""Pipeline of two remote model shards, PyTorch's RPC pipeline example in small: a
convolutional shard on worker1 and a classifier shard on worker2; the master splits each
batch into micro-batches and sends every micro-batch through both shards asynchronously
(``remote`` to shard 1, ``rpc_async`` to shard 2 with the RRef of shard 1's output), so the
shards work on different micro-batches at the same time. Backward: distributed autograd;
update: one DistributedOptimizer over both shards' parameters.

Run (rank 0 is the master)::

    shardflow run -n 3 examples/rpc_pipeline.py --steps 3 --split-size 4

The same file runs on PyTorch with its ``shardflow`` imports changed to ``torch``.
"""

import argparse
import os
import threading

import numpy as np

import shardflow as torch
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.distributed.optim import DistributedOptimizer
from shardflow.distributed.rpc import RRef

num_classes = 10
batch_size = 8


def init_weights(module, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


def _call_method(method, rref, *args, **kwargs):
    return method(rref.local_value(), *args, **kwargs)


def _remote_on_rref(method, rref, *args, **kwargs):
    return rpc.remote(rref.owner(), _call_method, args=[method, rref] + list(args), kwargs=kwargs)


def _async_on_rref(method, rref, *args, **kwargs):
    return rpc.rpc_async(rref.owner(), _call_method, args=[method, rref] + list(args), kwargs=kwargs)


def _parameter_rrefs(module):
    return [RRef(param) for param in module.parameters()]


class Shard1(nn.Module):
    def __init__(self, device):
        super().__init__()
        self._lock = threading.Lock()
        self.device = device
        self.seq = nn.Sequential(
            nn.Conv2d(3, 6, kernel_size=3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
            nn.MaxPool2d(2), nn.Conv2d(6, 8, kernel_size=3, padding=1), nn.ReLU(),
        ).to(self.device)
        init_weights(self, 11)

    def forward(self, x_rref):
        x = x_rref.to_here().to(self.device)
        with self._lock:
            out = self.seq(x)
        return out.cpu()


class Shard2(nn.Module):
    def __init__(self, device):
        super().__init__()
        self._lock = threading.Lock()
        self.device = device
        self.seq = nn.Sequential(nn.AdaptiveAvgPool2d((2, 2))).to(self.device)
        self.fc = nn.Linear(8 * 2 * 2, num_classes).to(self.device)
        init_weights(self, 12)

    def forward(self, x_rref):
        x = x_rref.to_here().to(self.device)
        with self._lock:
            out = self.fc(torch.flatten(self.seq(x), 1))
        return out.cpu()


class DistNet(nn.Module):
    def __init__(self, split_size, workers):
        super().__init__()
        self.split_size = split_size
        self.p1_rref = rpc.remote(workers[0], Shard1, args=("cpu",))
        self.p2_rref = rpc.remote(workers[1], Shard2, args=("cpu",))

    def forward(self, xs):
        out_futures = []
        for x in iter(xs.split(self.split_size, dim=0)):
            x_rref = RRef(x)
            y_rref = _remote_on_rref(Shard1.forward, self.p1_rref, x_rref)
            z_fut = _async_on_rref(Shard2.forward, self.p2_rref, y_rref)
            out_futures.append(z_fut)
        return torch.cat(torch.futures.wait_all(out_futures))

    def parameter_rrefs(self):
        remote_params = []
        remote_params.extend(_remote_on_rref(_parameter_rrefs, self.p1_rref).to_here())
        remote_params.extend(_remote_on_rref(_parameter_rrefs, self.p2_rref).to_here())
        return remote_params


def run_master(split_size, steps):
    model = DistNet(split_size, ["worker1", "worker2"])
    loss_fn = nn.MSELoss()
    opt = DistributedOptimizer(optim.SGD, model.parameter_rrefs(), lr=0.2)
    rng = np.random.default_rng(5)
    for step in range(steps):
        inputs = torch.from_numpy(rng.standard_normal((batch_size, 3, 8, 8)).astype(np.float32))
        labels = torch.zeros(batch_size, num_classes).scatter_(
            1, torch.from_numpy(rng.integers(0, num_classes, size=(batch_size, 1))), 1)
        with dist_autograd.context() as context_id:
            loss = loss_fn(model(inputs), labels)
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
        print(f"master step {step} loss {loss.item():.9g}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="pipeline of two remote shards over RPC")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--split-size", type=int, default=4)
    args = parser.parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank == 0:
        rpc.init_rpc("master", rank=rank, world_size=world_size)
        run_master(args.split_size, args.steps)
    else:
        rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size)
    rpc.shutdown()


if __name__ == "__main__":
    main()
