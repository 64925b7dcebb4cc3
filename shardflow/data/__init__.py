"""Data loading (layer L3): datasets, samplers, ``DataLoader`` and readers for local data.

Also importable as ``shardflow.utils.data`` (PyTorch's path), so
``from torch.utils.data import DataLoader`` becomes ``from shardflow.utils.data import
DataLoader``. See ``dataloader.py`` for workers and automatic sharding across ranks.
"""

from ._world import note_data_parallel
from .collate import default_collate, default_convert, pad_collate
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .datasets import (
    CIFAR10,
    MNIST,
    Digits,
    FashionMNIST,
    SyntheticDataset,
    SyntheticTokens,
    TextCorpus,
    default_text_root,
    read_idx,
)
from .sampler import (
    BatchSampler,
    BucketBatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
    "StackDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
    "BucketBatchSampler", "DataLoader", "get_worker_info", "WorkerInfo", "default_collate",
    "default_convert", "pad_collate", "MNIST", "FashionMNIST", "CIFAR10", "TextCorpus",
    "Digits", "SyntheticDataset", "SyntheticTokens", "read_idx", "default_text_root",
    "note_data_parallel",
]
