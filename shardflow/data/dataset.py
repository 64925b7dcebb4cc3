"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset``,
``ChainDataset``, ``random_split``.

Semantics follow ``torch.utils.data``. A map-style dataset implements ``__getitem__`` and
``__len__``; it may also implement ``__getitems__(indices) -> list`` to fetch a whole batch
at once (the DataLoader uses it when present, as PyTorch 2.x does). An iterable dataset
implements ``__iter__``; inside a DataLoader worker, ``get_worker_info()`` tells it which
part of the stream is its own.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from ..autograd.tensor import Tensor, _wrap
from ..backend import random as _random
from ..backend import random_stream as _stream

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
    "StackDataset", "random_split",
]


class Dataset:
    """A map-style dataset: ``dataset[i]`` returns sample ``i``; ``len(dataset)`` its size."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: implement ``__iter__``. With ``num_workers > 0`` every worker
    gets its own copy; split the stream with ``get_worker_info()`` or samples repeat."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; every tensor has the same first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        for k, t in enumerate(tensors):
            if t.shape[0] != n:
                raise ValueError(
                    f"size mismatch between tensors: tensor 0 has {n} rows, tensor {k} has "
                    f"{t.shape[0]}; every tensor must have the same first dimension"
                )
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(_index(t, index) for t in self.tensors)

    def __getitems__(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        cols = [t.array[idx] if isinstance(t, Tensor) else t[idx] for t in self.tensors]
        wrap = [isinstance(t, Tensor) for t in self.tensors]  # one fancy index per tensor
        return [tuple(_wrap(c[i]) if w else c[i] for c, w in zip(cols, wrap)) for i in range(len(idx))]

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def _index(t, index):
    if isinstance(t, Tensor):
        return _wrap(t.array[index])
    return t[index]


class StackDataset(Dataset):
    """Samples are tuples (positional) or dicts (keyword) of the given datasets' samples."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset takes datasets positionally or by keyword, not both")
        self._tuple = bool(args)
        self.datasets = args if args else kwargs
        items = list(args) if args else list(kwargs.values())
        if not items:
            raise ValueError("StackDataset needs at least one dataset")
        self._length = len(items[0])
        if any(len(d) != self._length for d in items):
            raise ValueError("size mismatch between datasets: all must have the same length")

    def __getitem__(self, index):
        if self._tuple:
            return tuple(d[index] for d in self.datasets)
        return {k: d[index] for k, d in self.datasets.items()}

    def __len__(self):
        return self._length


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after another; ``cumulative_sizes[k]`` is the end of dataset ``k``."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; use ChainDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise IndexError(f"index {idx} out of range for dataset of length {len(self)}")
            idx = len(self) + idx
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if k == 0 else self.cumulative_sizes[k - 1]
        return self.datasets[k][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split into non-overlapping ``Subset`` s of the given lengths (or fractions summing to 1).

    Algorithm (PyTorch's): fractions become floor(frac * n) each, the remainder is dealt one
    by one round-robin; then one random permutation of ``range(n)`` is cut into pieces.
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and any(
        isinstance(x, float) for x in lengths
    ):
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(x < 0 for x in lengths):
        raise ValueError(f"random_split lengths must be non-negative, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(
            f"sum of input lengths ({sum(lengths)}) does not equal the length of the input "
            f"dataset ({n}); pass lengths that add up to {n} or fractions that add up to 1"
        )
    perm = _stream.permutation(_random.get(generator), n).tolist()  # torch's randperm(n, generator)
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset: offset + length]))
        offset += length
    return out
