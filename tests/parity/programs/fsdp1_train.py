# ruff: noqa: I001  (the script's own import order kept)
# A typical FSDP1 training script written for PyTorch, in the shape of PyTorch's FSDP
# tutorial (pytorch.org/tutorials/intermediate/FSDP_tutorial.html: init_process_group,
# DistributedSampler, FullyShardedDataParallel with a transformer auto-wrap policy, AdamW, a
# summed loss all-reduced for logging, a FULL_STATE_DICT saved on rank 0). The model is a
# small stack of residual blocks (the "transformer layers" the policy wraps) on random data.
# Run it with `torchrun --nproc-per-node 2 fsdp1_train.py --save model.pt` (torch) or
# `shardflow run -n 2` with `import torch` changed to `import shardflow as torch`
# (tests/distributed/test_fsdp1_script.py).
import argparse
import functools

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import (
    BackwardPrefetch,
    FullStateDictConfig,
    MixedPrecision,
    ShardingStrategy,
    StateDictType,
)
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, dim=16, classes=4, layers=2):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(layers)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def make_dataset():
    return TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))


def train(model, rank, world_size, loader, optimizer, epoch, sampler):
    model.train()
    ddp_loss = torch.zeros(2)
    sampler.set_epoch(epoch)
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target, reduction="sum")
        loss.backward()
        optimizer.step()
        ddp_loss[0] += loss.item()
        ddp_loss[1] += len(data)
    dist.all_reduce(ddp_loss, op=dist.ReduceOp.SUM)
    if rank == 0:
        print(f"Train Epoch: {epoch} \tLoss: {ddp_loss[0] / ddp_loss[1]:.6f}")
    return float(ddp_loss[0] / ddp_loss[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--save", type=str, default="fsdp1_model.pt")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    dataset = make_dataset()
    sampler = DistributedSampler(dataset, rank=rank, num_replicas=world_size, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = Net()
    auto_wrap_policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    model = FSDP(model, auto_wrap_policy=auto_wrap_policy, device_id=None,
                 sharding_strategy=ShardingStrategy.FULL_SHARD,
                 backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=MixedPrecision(param_dtype=torch.float32, reduce_dtype=torch.float32,
                                                buffer_dtype=torch.float32))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        train(model, rank, world_size, loader, optimizer, epoch, sampler)

    dist.barrier()
    save_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, save_policy):
        cpu_state = model.state_dict()
    if rank == 0:
        torch.save(cpu_state, args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
