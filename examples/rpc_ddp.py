"""DDP trainers with a remote embedding table, PyTorch's "DDP + RPC" example in small.
Four processes: two trainers (ranks 0 and 1), a master (rank 2) and a parameter server
(rank 3). The master creates the embedding table on the server as a RemoteModule and
starts the training loop on both trainers. Each trainer looks its batch up in the remote
table (RPC) and runs a dense layer wrapped in DistributedDataParallel over the trainers'
process group; distributed autograd carries the gradients back to the table (DDP averages
the dense layer's over the trainers) and one DistributedOptimizer per trainer steps both.
A barrier of the trainers' group after each step keeps their updates of the shared table
in lock step (so the run is deterministic).

Run (the collectives need MPI's launcher)::

    shardflow run -n 4 examples/rpc_ddp.py --steps 4

The same file runs on PyTorch with its ``shardflow`` imports changed to ``torch`` (there
with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set, e.g. by torchrun).
"""

import argparse
import os

import numpy as np

import shardflow as torch
import shardflow.distributed as dist
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.distributed.nn import RemoteModule
from shardflow.distributed.optim import DistributedOptimizer
from shardflow.distributed.rpc import RRef, TensorPipeRpcBackendOptions
from shardflow.nn.parallel import DistributedDataParallel as DDP

NUM_EMBEDDINGS = 20
EMBEDDING_DIM = 8
NUM_CLASSES = 4
trainer_group = None


def init_weights(module, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))


class EmbeddingTable(nn.Module):
    """A bag-of-ids embedding: the mean of each row's embeddings."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.emb = nn.Embedding(num_embeddings, embedding_dim)
        init_weights(self, 21)

    def forward(self, indices):
        return self.emb(indices).mean(1)   # (B, L) ids -> (B, D)


class HybridModel(nn.Module):
    def __init__(self, remote_emb_module, process_group):
        super().__init__()
        self.remote_emb_module = remote_emb_module
        fc = nn.Linear(EMBEDDING_DIM, NUM_CLASSES)
        init_weights(fc, 22)
        self.fc = DDP(fc, process_group=process_group)

    def forward(self, indices):
        emb_lookup = self.remote_emb_module.forward(indices)
        return self.fc(emb_lookup)


def get_next_batch(rank, steps):
    rng = np.random.default_rng(50 + rank)
    for step in range(steps):
        indices = torch.from_numpy(rng.integers(0, NUM_EMBEDDINGS, size=(6, 3)))
        target = torch.from_numpy(rng.integers(0, NUM_CLASSES, size=6))
        yield step, indices, target


def _run_trainer(remote_emb_module, rank, steps):
    model = HybridModel(remote_emb_module, trainer_group)
    model_parameter_rrefs = model.remote_emb_module.remote_parameters()
    for param in model.fc.parameters():
        model_parameter_rrefs.append(RRef(param))
    opt = DistributedOptimizer(optim.SGD, model_parameter_rrefs, lr=0.5)
    criterion = torch.nn.CrossEntropyLoss()
    for step, indices, target in get_next_batch(rank, steps):
        with dist_autograd.context() as context_id:
            loss = criterion(model(indices), target)
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
        dist.barrier(group=trainer_group)
        print(f"trainer{rank} step {step} loss {loss.item():.9g}", flush=True)


def main():
    global trainer_group
    parser = argparse.ArgumentParser(description="DDP trainers with a remote embedding table")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(backend="gloo")
    trainer_group = dist.new_group([0, 1])
    rpc_backend_options = TensorPipeRpcBackendOptions()
    rpc_backend_options.init_method = (
        f"tcp://{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}")
    if rank == 2:
        rpc.init_rpc("master", rank=rank, world_size=world_size, rpc_backend_options=rpc_backend_options)
        remote_emb_module = RemoteModule("ps", EmbeddingTable, args=(NUM_EMBEDDINGS, EMBEDDING_DIM))
        futs = [rpc.rpc_async(f"trainer{r}", _run_trainer, args=(remote_emb_module, r, args.steps))
                for r in (0, 1)]
        for fut in futs:
            fut.wait()
    elif rank <= 1:
        rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world_size,
                     rpc_backend_options=rpc_backend_options)
    else:
        rpc.init_rpc("ps", rank=rank, world_size=world_size, rpc_backend_options=rpc_backend_options)
    rpc.shutdown()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
