"""Parameter server with batched updates, PyTorch's batch-RPC example in small: trainers
compute gradients on their own copy of the model and send them to the server, whose
``async_execution`` function answers only when the gradients of every trainer have been
summed, averaged and applied (SGD with momentum), with the updated model.

Run (rank 0 is the server)::

    shardflow run -n 3 examples/rpc_batch_parameter_server.py --steps 4

The same file runs on PyTorch with its ``shardflow`` imports changed to ``torch``.
"""

import argparse
import os
import threading

import numpy as np

import shardflow as torch
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim

num_classes = 6


def init_weights(module, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))


def make_model():
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, num_classes))
    init_weights(model, 1)
    return model


class BatchUpdateParameterServer:
    def __init__(self, batch_update_size):
        self.model = make_model()
        self.lock = threading.Lock()
        self.future_model = torch.futures.Future()
        self.batch_update_size = batch_update_size
        self.curr_update_size = 0
        self.optimizer = optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        for p in self.model.parameters():
            p.grad = torch.zeros_like(p)

    def get_model(self):
        return self.model

    @staticmethod
    @rpc.functions.async_execution
    def update_and_fetch_model(ps_rref, grads):
        self = ps_rref.local_value()
        with self.lock:
            for p, g in zip(self.model.parameters(), grads):
                p.grad += g
            self.curr_update_size += 1
            fut = self.future_model
            if self.curr_update_size >= self.batch_update_size:
                for p in self.model.parameters():
                    p.grad /= self.batch_update_size
                self.curr_update_size = 0
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=False)
                fut.set_result(self.model)
                self.future_model = torch.futures.Future()
        return fut


class Trainer:
    def __init__(self, ps_rref, steps):
        self.ps_rref = ps_rref
        self.steps = steps
        self.loss_fn = nn.MSELoss()

    def get_next_batch(self, rank):
        for step in range(self.steps):
            rng = np.random.default_rng(100 * rank + step)
            inputs = torch.from_numpy(rng.standard_normal((10, 12)).astype(np.float32))
            labels = torch.zeros(10, num_classes).scatter_(
                1, torch.from_numpy(rng.integers(0, num_classes, size=(10, 1))), 1)
            yield step, inputs, labels

    def train(self):
        name = rpc.get_worker_info().name
        rank = rpc.get_worker_info().id
        m = self.ps_rref.rpc_sync().get_model()
        for step, inputs, labels in self.get_next_batch(rank):
            loss = self.loss_fn(m(inputs), labels)
            loss.backward()
            print(f"{name} step {step} loss {loss.item():.9g}", flush=True)
            m = rpc.rpc_sync(self.ps_rref.owner(), BatchUpdateParameterServer.update_and_fetch_model,
                             args=(self.ps_rref, [p.grad for p in m.parameters()]))


def run_trainer(ps_rref, steps):
    Trainer(ps_rref, steps).train()


def run_ps(trainers, steps):
    ps_rref = rpc.RRef(BatchUpdateParameterServer(len(trainers)))
    futs = [rpc.rpc_async(trainer, run_trainer, args=(ps_rref, steps)) for trainer in trainers]
    torch.futures.wait_all(futs)


def main():
    parser = argparse.ArgumentParser(description="RPC parameter server with batched updates")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=16, rpc_timeout=60)
    if rank != 0:
        rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world_size, rpc_backend_options=options)
    else:
        rpc.init_rpc("ps", rank=rank, world_size=world_size, rpc_backend_options=options)
        run_ps([f"trainer{r}" for r in range(1, world_size)], args.steps)
    rpc.shutdown()


if __name__ == "__main__":
    main()
