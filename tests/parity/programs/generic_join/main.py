# ruff: noqa: I001, UP008  (the tutorial's own style kept)
# PyTorch's tutorial "Distributed Training with Uneven Inputs Using the Join Context Manager"
# (pytorch/tutorials, advanced_source/generic_join.rst, commit 0e3158bae11a9a55a0b129bb6cc02de9481d9c48,
# BSD-3-Clause): its three programs, each started on 2 processes with mp.spawn: DDP under
# Join([model]), DDP with ZeroRedundancyOptimizer(Adam) under Join([model, optim]), and the
# toy Joinable `Counter` with its `CounterJoinHook` under Join([counter], sync_max_count=True).
# Rank 1 gets one more input than rank 0. Changes, and only these: it runs on CPUs, so
# BACKEND is "gloo" (the tutorial's "nccl" needs a GPU per rank), the models and the counter
# stay on the CPU (no `.to(rank)`, no `device_ids=[rank]`, `torch.device("cpu")` for the
# counter, the `assert torch.cuda.device_count() >= WORLD_SIZE` dropped); MASTER_PORT is 29517
# (not 29500, which other jobs on a test machine may hold); the three `worker`s are named
# worker_ddp, worker_zero and worker_counter, and `python main.py ddp|zero|counter` runs one;
# the two DDP workers start their Linear(1, 1) from fixed weights (`fixed`: each framework
# draws its own random ones) and also print their gradients or parameters after the loop
# (the tutorial prints only the number of inputs), so that the runs can be compared.
import os
import sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.join import Join, Joinable, JoinHook
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.optim import ZeroRedundancyOptimizer as ZeRO
from torch.optim import Adam

BACKEND = "gloo"
WORLD_SIZE = 2
NUM_INPUTS = 5


def fixed(linear):
    """The same starting weights in both frameworks (each draws its own random ones)."""
    with torch.no_grad():
        linear.weight.fill_(0.5)
        linear.bias.fill_(-0.25)
    return linear


def worker_ddp(rank):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '29517'
    dist.init_process_group(BACKEND, rank=rank, world_size=WORLD_SIZE)

    model = DDP(fixed(torch.nn.Linear(1, 1)))
    # Rank 1 gets one more input than rank 0
    inputs = [torch.tensor([1]).float() for _ in range(NUM_INPUTS + rank)]

    num_inputs = 0
    with Join([model]):
        for input in inputs:
            num_inputs += 1
            loss = model(input).sum()
            loss.backward()

    print(f"Rank {rank} has exhausted all {num_inputs} of its inputs!")
    print(f"Rank {rank} DDP grads {[round(p.grad.item(), 6) for p in model.parameters()]}")


def worker_zero(rank):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '29517'
    dist.init_process_group(BACKEND, rank=rank, world_size=WORLD_SIZE)

    model = DDP(fixed(torch.nn.Linear(1, 1)))
    optim = ZeRO(model.parameters(), Adam, lr=0.01)
    # Rank 1 gets one more input than rank 0
    inputs = [torch.tensor([1]).float() for _ in range(NUM_INPUTS + rank)]

    num_inputs = 0
    # Pass both `model` and `optim` into `Join()`
    with Join([model, optim]):
        for input in inputs:
            num_inputs += 1
            loss = model(input).sum()
            loss.backward()
            optim.step()

    print(f"Rank {rank} has exhausted all {num_inputs} of its inputs!")
    print(f"Rank {rank} ZeRO params {[round(p.item(), 6) for p in model.parameters()]}")


class CounterJoinHook(JoinHook):
    r"""
    Join hook for :class:`Counter`.

    Arguments:
        counter (Counter): the :class:`Counter` object using this hook.
        sync_max_count (bool): whether to sync the max count once all ranks
            join.
    """
    def __init__(
        self,
        counter,
        sync_max_count
    ):
        self.counter = counter
        self.sync_max_count = sync_max_count

    def main_hook(self):
        r"""
        Shadows the counter's all-reduce by all-reducing a dim-1 zero tensor.
        """
        t = torch.zeros(1, device=self.counter.device)
        dist.all_reduce(t)

    def post_hook(self, is_last_joiner: bool):
        r"""
        Synchronizes the max count across all :class:`Counter` s if
        ``sync_max_count=True``.
        """
        if not self.sync_max_count:
            return
        rank = dist.get_rank(self.counter.process_group)
        common_rank = self.counter.find_common_rank(rank, is_last_joiner)
        if rank == common_rank:
            self.counter.max_count = self.counter.count.detach().clone()
        dist.broadcast(self.counter.max_count, src=common_rank)


class Counter(Joinable):
    r"""
    Example :class:`Joinable` that counts the number of training iterations
    that it participates in.
    """
    def __init__(self, device, process_group):
        super(Counter, self).__init__()
        self.device = device
        self.process_group = process_group
        self.count = torch.tensor([0], device=device).float()
        self.max_count = torch.tensor([0], device=device).float()

    def __call__(self):
        r"""
        Counts the number of inputs processed on this iteration by all ranks
        by all-reducing a dim-1 one tensor; increments its own internal count.
        """
        Join.notify_join_context(self)
        t = torch.ones(1, device=self.device).float()
        dist.all_reduce(t)
        self.count += t

    def join_hook(self, **kwargs) -> JoinHook:
        r"""
        Return a join hook that shadows the all-reduce in :meth:`__call__`.

        This join hook supports the following keyword arguments:
            sync_max_count (bool, optional): whether to synchronize the maximum
                count across all ranks once all ranks join; default is ``False``.
        """
        sync_max_count = kwargs.get("sync_max_count", False)
        return CounterJoinHook(self, sync_max_count)

    @property
    def join_device(self) -> torch.device:
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def find_common_rank(self, rank, to_consider):
        r"""
        Returns the max rank of the ones to consider over the process group.
        """
        common_rank = torch.tensor([rank if to_consider else -1], device=self.device)
        dist.all_reduce(common_rank, op=dist.ReduceOp.MAX, group=self.process_group)
        common_rank = common_rank.item()
        return common_rank


def worker_counter(rank):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '29517'
    dist.init_process_group(BACKEND, rank=rank, world_size=WORLD_SIZE)

    counter = Counter(torch.device("cpu"), dist.group.WORLD)
    inputs = [torch.tensor([1]).float() for _ in range(NUM_INPUTS + rank)]

    with Join([counter], sync_max_count=True):
        for _ in inputs:
            counter()

    print(f"{int(counter.count.item())} inputs processed before rank {rank} joined!")
    print(f"{int(counter.max_count.item())} inputs processed across all ranks!")


def main(worker):
    mp.spawn(worker, nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    main(globals()[f"worker_{sys.argv[1]}"])
    sys.stdout.flush()
