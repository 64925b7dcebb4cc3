# ruff: noqa: F401  (the program's own imports, kept)
"""rosinality/vq-vae-2-pytorch, ``distributed/distributed.py``: the two helpers ``vqvae.py``
and ``train_vqvae.py`` use (``all_reduce``, ``all_gather``) and what they rest on, as
published (``all_gather``'s multi-rank pickling path cut: the test runs without a group)."""
import torch
from torch import distributed as dist


def is_primary():
    return get_rank() == 0


def get_rank():
    if not dist.is_available():
        return 0

    if not dist.is_initialized():
        return 0

    return dist.get_rank()


def get_world_size():
    if not dist.is_available():
        return 1

    if not dist.is_initialized():
        return 1

    return dist.get_world_size()


def all_reduce(tensor, op=dist.ReduceOp.SUM, async_op=False):
    world_size = get_world_size()

    if world_size == 1:
        return tensor

    return dist.all_reduce(tensor, op=op, async_op=async_op)


def all_gather(data):
    world_size = get_world_size()

    if world_size == 1:
        return [data]

    raise NotImplementedError("the multi-rank path is cut (see the docstring)")
