"""``check_storage``: a user's own storage class is refused by name before a save or load
(its own module: it names the storages, which subclass ``storage.py``'s bases)."""

from __future__ import annotations

from .filesystem import FileSystemReader, FileSystemWriter
from .hf_storage import HuggingFaceStorageReader, HuggingFaceStorageWriter


def check_storage(storage, base: type, what: str) -> None:
    """A user's own ``StorageWriter``/``StorageReader`` subclass cannot drive shardflow's
    protocol: refuse it by name (before anything is written or read)."""
    ours = (FileSystemWriter, HuggingFaceStorageWriter, FileSystemReader, HuggingFaceStorageReader)
    if not isinstance(storage, ours):
        raise NotImplementedError(
            f"dcp.{what} got a {type(storage).__name__} storage; shardflow reads and writes "
            "FileSystemWriter/FileSystemReader folders and HuggingFaceStorageWriter/Reader "
            "safetensors folders (docs/CHECKPOINT.md). Pass one of those (or checkpoint_id=)"
        )
