"""Samplers: which indices a DataLoader visits, and in what order.

``SequentialSampler`` 0..n-1. ``RandomSampler`` a permutation (or draws with replacement);
with ``generator=None`` each epoch takes a fresh seed from the default generator, so
``shardflow.manual_seed`` fixes the order. ``BatchSampler`` groups indices into lists.

``DistributedSampler`` (PyTorch's algorithm): every rank builds the same permutation from
``seed + epoch``, pads it by repeating its head until its length is a multiple of the
number of replicas (or drops the tail with ``drop_last``), then rank ``r`` takes positions
``r, r + R, r + 2R, ...``. So the ranks' parts are disjoint (before padding), cover the set,
and have equal length, which keeps collectives in step. Call ``set_epoch(e)`` every epoch.
``num_replicas`` / ``rank`` must be ints (a TypeError at construction; torch fails in
``__iter__``) with ``0 <= rank < num_replicas`` (torch's ValueError "Invalid rank 2, rank
should be in the interval [0, 1]", and the fix). Like torch, values that are valid but not
the process group's (``rank=0`` on every rank) are not detected: each rank would read that
share.

``BucketBatchSampler`` for variable-length sequences: shuffle the indices, cut them into
pools of ``batch_size * bucket_size_multiplier``, sort each pool by length, cut pools into
batches and shuffle the batch order. Batches then hold sequences of similar length (little
padding) while the epoch stays random. Under a world size > 1 give it ``num_replicas`` /
``rank`` and each rank gets every R-th batch (padded so all ranks get the same count).
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import random as _random
from ..backend import random_stream as _stream
from . import _world

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "BucketBatchSampler",
]


class Sampler:
    """Base class: iterate over indices (or lists of indices for a batch sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def int64_seed(generator=None) -> int:
    """torch's ``torch.empty((), dtype=torch.int64).random_(generator=g).item()``: how its
    samplers and loaders draw a seed (``random64() % 2^63`` on torch's stream)."""
    return int(_stream.full_range(_random.get(generator), 1, np.int64)[0])


def _own_or_fresh(generator):
    """The sampler's generator, or (torch's ``RandomSampler``) a new one seeded from the
    default generator's next int64."""
    return generator if generator is not None else _random.Generator().manual_seed(int64_seed())


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per epoch; with ``replacement`` ``num_samples`` uniform draws."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        self.data_source = data_source
        self.replacement = bool(replacement)
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            # PyTorch's words first (people search for them), then why and the fix
            why = ("the data set is empty (its __len__ returned 0); give the loader a non-empty "
                   "data set" if num_samples is None else "pass num_samples=N with N >= 1")
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples!r}: {why}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        """torch's draws: a fresh generator seeded from the default one (unless ``generator``),
        then ``randperm(n)`` per pass, or ``randint(0, n)`` 32 at a time with replacement."""
        n = len(self.data_source)
        gen = _own_or_fresh(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _stream.integers(gen, 32, 0, n).tolist()
            yield from _stream.integers(gen, self.num_samples % 32, 0, n).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from _stream.permutation(gen, n).tolist()
        yield from _stream.permutation(gen, n)[: self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        # torch: randperm with the sampler's generator, else the default one
        for i in _stream.permutation(_random.get(self.generator), len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights must be a 1-D sequence of non-negative numbers with sum > 0")
        if not replacement and num_samples > (w > 0).sum():
            raise ValueError(
                f"cannot draw {num_samples} samples without replacement from "
                f"{int((w > 0).sum())} non-zero weights"
            )
        self.weights, self.num_samples = w, int(num_samples)
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        # torch: multinomial(weights as float64, num_samples, replacement, generator)
        w = self.weights.reshape(1, -1)
        idx = _stream.multinomial(_random.get(self.generator), w, w.sum(axis=1, keepdims=True),
                                  self.num_samples, self.replacement)
        yield from idx[0].tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (last one may be short)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        # torch's words; a drop_last that is not a bool was taken as bool(): "False" dropped
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}"
                             f" (pass True or False, not {type(drop_last).__name__} "
                             f"{drop_last!r})")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _replicas(num_replicas, rank):
    if num_replicas is None or rank is None:
        r, w = _world.world()
        num_replicas = w if num_replicas is None else num_replicas
        rank = r if rank is None else rank
    for name, value in (("num_replicas", num_replicas), ("rank", rank)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            # torch fails later, in __iter__ ("slice indices must be integers ...")
            raise TypeError(f"{name} must be an int, got "
                            f"{type(value).__name__} {value!r}; pass e.g. "
                            f"{name}=dist.get_{'world_size' if name == 'num_replicas' else 'rank'}()")
    if num_replicas < 1:
        raise ValueError(f"num_replicas must be >= 1, got {num_replicas}")
    if not 0 <= rank < num_replicas:  # torch's words, then the fix
        raise ValueError(
            f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}] "
            f"(rank is this process's index among the num_replicas={num_replicas} replicas: pass "
            "rank=dist.get_rank() with num_replicas=dist.get_world_size(), or leave both out "
            "to take them from the process group)")
    return int(num_replicas), int(rank)


class DistributedSampler(Sampler):
    """This rank's share of the dataset (see the module docstring for the algorithm)."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        self.num_replicas, self.rank = _replicas(num_replicas, rank)
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, int(seed), drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = n // self.num_replicas
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            # torch's: randperm(n) from a Generator seeded with seed + epoch
            indices = _stream.permutation(_random.Generator().manual_seed(self.seed + self.epoch), n)
        else:
            indices = np.arange(n)
        if not self.drop_last:
            pad = self.total_size - n
            if pad > 0:
                reps = math.ceil(pad / max(n, 1))
                indices = np.concatenate([indices, np.tile(indices, reps)[:pad]])
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank: self.total_size: self.num_replicas].tolist())

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch`` (the same on every rank)."""
        self.epoch = int(epoch)


class BucketBatchSampler(Sampler):
    """Length-bucketed random batches (see the module docstring)."""

    def __init__(self, lengths, batch_size: int, bucket_size_multiplier: int = 50,
                 shuffle: bool = True, drop_last: bool = False, seed: int = 0,
                 num_replicas: int | None = 1, rank: int | None = 0):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.lengths.ndim != 1:
            raise ValueError("lengths must be a 1-D sequence of sample lengths")
        if batch_size <= 0 or bucket_size_multiplier <= 0:
            raise ValueError("batch_size and bucket_size_multiplier must be positive")
        self.batch_size, self.mult = int(batch_size), int(bucket_size_multiplier)
        self.shuffle, self.drop_last, self.seed = shuffle, drop_last, int(seed)
        self.num_replicas, self.rank = _replicas(num_replicas, rank)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _all_batches(self) -> list[list[int]]:
        n = len(self.lengths)
        rng = np.random.default_rng(self.seed + self.epoch)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        pool = self.batch_size * self.mult
        batches = []
        for start in range(0, n, pool):
            chunk = order[start: start + pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            for b in range(0, len(chunk), self.batch_size):
                batch = chunk[b: b + self.batch_size]
                if len(batch) < self.batch_size and self.drop_last:
                    continue
                batches.append(batch.tolist())
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches

    def __iter__(self):
        batches = self._all_batches()
        R = self.num_replicas
        if R > 1 and batches:
            per = math.ceil(len(batches) / R)
            batches = batches + batches[: per * R - len(batches)]
            batches = batches[self.rank:: R]
        return iter(batches)

    def __len__(self):
        n = len(self.lengths)
        pool = self.batch_size * self.mult
        total = 0
        for start in range(0, n, pool):
            m = min(pool, n - start)
            total += m // self.batch_size if self.drop_last else -(-m // self.batch_size)
        return math.ceil(total / self.num_replicas)
