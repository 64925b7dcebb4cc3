"""PyTorch DCP's storage names: ``StorageWriter`` / ``StorageReader`` (the bases of the
file-system and Hugging Face storages) and the metadata dataclasses a reader's
``read_metadata()`` returns (``Metadata``, ``TensorStorageMetadata``,
``BytesStorageMetadata``, ``ChunkStorageMetadata``, ``TensorProperties``).

:func:`metadata_of` builds a ``Metadata`` from a checkpoint's ``index.json``: one entry per
flattened key, a tensor's logical size, dtype and the boxes (chunks) it was saved as, so a
program can list what a checkpoint holds (``reader.read_metadata().state_dict_metadata``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...autograd.tensor import Size
from ...backend.dtypes import from_numpy_dtype
from ...checkpoint import safetensors as st

__all__ = ["StorageWriter", "StorageReader", "Metadata", "TensorStorageMetadata",
           "BytesStorageMetadata", "ChunkStorageMetadata", "TensorProperties", "metadata_of"]


class StorageWriter:
    """Base of the storages :func:`~.save` writes to (``FileSystemWriter``,
    ``HuggingFaceStorageWriter``)."""


class StorageReader:
    """Base of the storages :func:`~.load` reads from (``FileSystemReader``,
    ``HuggingFaceStorageReader``)."""


@dataclass
class ChunkStorageMetadata:
    """A saved box of a tensor: ``offsets`` and ``sizes`` per dimension."""

    offsets: Any
    sizes: Any


@dataclass
class TensorProperties:
    dtype: Any = None
    layout: Any = None
    requires_grad: bool = False
    memory_format: Any = None
    pin_memory: bool = False


@dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: Any
    chunks: list


@dataclass
class BytesStorageMetadata:
    """A saved non-tensor value."""


@dataclass
class Metadata:
    state_dict_metadata: dict
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Any = None
    version: str | None = field(default=None)


def metadata_of(index: dict) -> Metadata:
    """``Metadata`` of a sharded checkpoint's index (module docstring)."""
    md: dict = {}
    for name, e in index["tensors"].items():
        chunks = [ChunkStorageMetadata(Size(s["offsets"]), Size(s["lengths"]))
                  for s in e["shards"]]
        md[name] = TensorStorageMetadata(TensorProperties(dtype=from_numpy_dtype(st._DTYPES[e["dtype"]])),
                                         Size(e["shape"]), chunks)
    for name in index["objects"]:
        md[name] = BytesStorageMetadata()
    return Metadata(md, version=index.get("format"))
