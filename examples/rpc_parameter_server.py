"""Parameter server with synchronous trainers, PyTorch's RPC parameter-server tutorial in
small: the model lives on the parameter server; each trainer runs the forward pass through
it (RPC), backward with distributed autograd, and steps the server's parameters with a
DistributedOptimizer. "Sync": a barrier on the server (an ``async_execution`` function)
keeps the trainers in lock step, so every gradient of step k is taken at the same weights.

Run (rank 0 is the server, ranks 1.. are trainers)::

    shardflow run -n 3 examples/rpc_parameter_server.py --steps 4

or as plain processes with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set. The same
file runs on PyTorch with its ``shardflow`` imports changed to ``torch``
(tests/distributed/rpc/test_rpc_programs.py compares the losses step by step).
"""

import argparse
import os
import threading

import numpy as np

import shardflow as torch
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.nn.functional as F
import shardflow.optim as optim
from shardflow.distributed.optim import DistributedOptimizer


def init_weights(module, seed):
    """Deterministic initial weights (the same in every framework)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, 10)
        init_weights(self, 0)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)   # (B, 4, 3, 3)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def call_method(method, rref, *args, **kwargs):
    return method(rref.local_value(), *args, **kwargs)


def remote_method(method, rref, *args, **kwargs):
    return rpc.rpc_sync(rref.owner(), call_method, args=[method, rref] + list(args), kwargs=kwargs)


class ParameterServer(nn.Module):
    def __init__(self, num_trainers):
        super().__init__()
        self.model = Net()
        self.num_trainers = num_trainers
        self.lock = threading.Lock()
        self.arrived = 0
        self.round = torch.futures.Future()

    def forward(self, inp):
        return self.model(inp)

    def get_param_rrefs(self):
        return [rpc.RRef(p) for p in self.model.parameters()]

    @staticmethod
    @rpc.functions.async_execution
    def barrier(ps_rref):
        """Answered when every trainer has called it in this round."""
        self = ps_rref.local_value()
        with self.lock:
            fut = self.round
            self.arrived += 1
            if self.arrived == self.num_trainers:
                self.arrived = 0
                self.round = torch.futures.Future()
                fut.set_result(None)
        return fut


param_server = None
global_lock = threading.Lock()


def get_parameter_server(num_trainers):
    global param_server
    with global_lock:   # one server however many trainers ask
        if param_server is None:
            param_server = ParameterServer(num_trainers)
        return param_server


class TrainerNet(nn.Module):
    def __init__(self, num_trainers):
        super().__init__()
        self.param_server_rref = rpc.remote("parameter_server", get_parameter_server,
                                            args=(num_trainers,))

    def get_global_param_rrefs(self):
        return remote_method(ParameterServer.get_param_rrefs, self.param_server_rref)

    def forward(self, x):
        return remote_method(ParameterServer.forward, self.param_server_rref, x)

    def sync(self):
        rpc.rpc_sync(self.param_server_rref.owner(), ParameterServer.barrier,
                     args=(self.param_server_rref,))


def batch(rank, step):
    rng = np.random.default_rng(1000 * rank + step)
    x = rng.standard_normal((8, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, size=8)
    return torch.from_numpy(x), torch.from_numpy(y)


def run_training_loop(rank, num_trainers, steps):
    net = TrainerNet(num_trainers)
    opt = DistributedOptimizer(optim.SGD, net.get_global_param_rrefs(), lr=0.1)
    for step in range(steps):
        data, target = batch(rank, step)
        with dist_autograd.context() as cid:
            loss = F.nll_loss(net(data), target)
            dist_autograd.backward(cid, [loss])
            net.sync()        # every trainer has its gradients for this step
            opt.step(cid)
            net.sync()        # every update is applied before the next forward
        print(f"trainer{rank} step {step} loss {loss.item():.9g}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="RPC parameter server, synchronous trainers")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank == 0:
        rpc.init_rpc("parameter_server", rank=rank, world_size=world_size)
    else:
        rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world_size)
        run_training_loop(rank, world_size - 1, args.steps)
    rpc.shutdown()   # the server waits here until every trainer is done


if __name__ == "__main__":
    main()
