"""``ElasticDistributedSampler(dataset, num_replicas=None, rank=None, start_index=0)``: torch's
elastic sampler: the indices ``start_index .. len(dataset) - 1`` shuffled with a generator
seeded by the epoch (``set_epoch``), padded to a multiple of ``num_replicas`` by repeating the
first ones, and every ``num_replicas``-th from ``rank`` (the same indices as torch's: shardflow's
``randperm`` draws torch's stream)."""

from __future__ import annotations

import math
from collections.abc import Sized

from .....backend.random import Generator
from .....data.sampler import DistributedSampler
from .....ops.creation import randperm

__all__ = ["ElasticDistributedSampler"]


class ElasticDistributedSampler(DistributedSampler):
    """A ``DistributedSampler`` over the dataset from ``start_index`` on (see the module docstring)."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, start_index: int = 0):
        super().__init__(dataset=dataset, num_replicas=num_replicas, rank=rank)
        if not isinstance(dataset, Sized):
            raise TypeError("Dataset must be an instance of collections.abc.Sized")
        if start_index >= len(dataset):
            raise ValueError(f"Start index {start_index} should be less than dataset size {len(dataset)}")
        self.start_index = start_index
        self.num_samples = math.ceil(float(len(self.dataset) - self.start_index) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        g = Generator()
        g.manual_seed(self.epoch)
        indices = (randperm(len(self.dataset) - self.start_index, generator=g) + self.start_index).tolist()
        indices += indices[: (self.total_size - len(indices))]
        if len(indices) != self.total_size:
            raise AssertionError
        indices = indices[self.rank: self.total_size: self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples
