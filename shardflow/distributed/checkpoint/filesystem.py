"""Files of a sharded checkpoint: per-rank safetensors shard files, the index, cleanup.

``FileSystemWriter(path)`` / ``FileSystemReader(path)`` (PyTorch DCP's names) hold the
folder and the I/O; :func:`~.save` and :func:`~.load` drive them.

* Shard files are ``__<rank>_<save_id>.safetensors``: ordinary safetensors files (any
  safetensors reader opens them) holding the pieces this rank was assigned, named
  ``<tensor>@<offsets>``. The ``save_id`` is fresh for every save, so a save never
  overwrites a file that the committed index refers to: a save killed half-way leaves the
  previous checkpoint intact, and its files are unreferenced strays.
* Each file is written with :func:`shardflow.checkpoint.atomic_write` (locked temp file,
  fsync, rename). The index is written the same way, last; a reader only ever opens
  ``index.json``, so a half-written index (a temp file) is never used.
* Cleanup, by the first rank at the start of the next save: temp files of killed writes
  (``clean_stale_temp_files``) and shard files (``__*_*.safetensors``) that the committed
  index does not name; after a commit, the previous save's shard files.
* Checksums: one CRC-32 per ``block_size`` bytes of each piece, recorded in the index.
  A reader reads whole blocks around the bytes it needs and verifies each one.

``fault_hook`` (tests only): called as ``fault_hook(stage, rank)`` at ``"planned"``,
``"shard_before_rename"`` (the shard's bytes are in its temp file), ``"shard_written"``,
``"index_before_rename"`` and ``"committed"``, so a test can kill a rank at each point.
"""

from __future__ import annotations

import os
import re
import zlib

import numpy as np

from ...checkpoint import atomic_write, clean_stale_temp_files
from ...checkpoint import safetensors as st
from .metadata import INDEX_NAME, CheckpointError, dumps_index, loads_index
from .storage import Metadata, StorageReader, StorageWriter, metadata_of

__all__ = ["FileSystemWriter", "FileSystemReader", "DEFAULT_BLOCK_SIZE", "shard_file_name"]

DEFAULT_BLOCK_SIZE = 1 << 20
_SHARD = re.compile(r"^__\d+_[0-9a-f]+\.safetensors$")


def shard_file_name(rank: int, save_id: str) -> str:
    return f"__{rank}_{save_id}.safetensors"


def block_crcs(flat: memoryview, block_size: int) -> list[int]:
    return [zlib.crc32(flat[i: i + block_size]) for i in range(0, len(flat), block_size)]


def dtype_name(a: np.ndarray, key: str) -> str:
    return st._dtype_name(a, key)


def dtype_of(name: str) -> np.dtype:
    return st._DTYPES[name]


class FileSystemWriter(StorageWriter):
    """Writes a sharded checkpoint into the folder ``path`` (made if missing).

    torch's options are accepted: ``single_file_per_rank``, ``sync_files``, ``thread_count``,
    ``per_thread_copy_ahead`` and ``cache_staged_state_dict`` change nothing (shardflow writes
    one file per rank, always fsynced, from the calling thread); ``overwrite=False`` makes a
    save into a folder that already holds a committed checkpoint an error, as in torch."""

    def __init__(self, path, single_file_per_rank: bool = True, sync_files: bool = True,
                 thread_count: int = 1, per_thread_copy_ahead: int = 10_000_000,
                 cache_staged_state_dict: bool = False, overwrite: bool = True, *,
                 serialization_format=None, block_size: int = DEFAULT_BLOCK_SIZE, fault_hook=None):
        if serialization_format is not None and str(getattr(serialization_format, "value",
                                                            serialization_format)) != "torch_save":
            raise NotImplementedError(
                f"FileSystemWriter(serialization_format={serialization_format!r}): shardflow writes "
                "its own checkpoint format (torch_save's layout); pass the default")
        if int(block_size) <= 0:
            raise ValueError(f"block_size must be a positive number of bytes, got {block_size}")
        self.path = os.fspath(path)
        self.overwrite = bool(overwrite)
        self.block_size = int(block_size)
        self.fault_hook = fault_hook

    def hook(self, stage: str, rank: int) -> None:
        if self.fault_hook is not None:
            self.fault_hook(stage, rank)

    def committed_files(self) -> set[str]:
        """Shard files the current index names (none when there is no valid index)."""
        try:
            with open(os.path.join(self.path, INDEX_NAME), "rb") as f:
                index = loads_index(f.read(), INDEX_NAME)
        except (OSError, CheckpointError):
            return set()
        return set(index.get("files", {}))

    def check_overwrite(self) -> None:
        """With ``overwrite=False``: an error if ``path`` already holds a committed checkpoint."""
        if not self.overwrite and os.path.exists(os.path.join(self.path, INDEX_NAME)):
            raise RuntimeError(
                f"Checkpoint already exists and overwrite is False: {self.path} holds "
                f"{INDEX_NAME}; save to a new folder or pass FileSystemWriter(path, "
                "overwrite=True)"
            )

    def clean_strays(self) -> list[str]:
        """Remove temp files of killed writes and shard files no committed index names."""
        os.makedirs(self.path, exist_ok=True)
        removed = [p for p, _ in clean_stale_temp_files(self.path, min_age_s=0.0)]
        keep = self.committed_files()
        for name in sorted(os.listdir(self.path)):
            if _SHARD.match(name) and name not in keep:
                try:
                    os.unlink(os.path.join(self.path, name))
                    removed.append(os.path.join(self.path, name))
                except FileNotFoundError:
                    pass
        return removed

    def write_shard(self, rank: int, save_id: str, pieces: dict[str, np.ndarray]) -> tuple[str, int, dict]:
        """Write ``pieces`` (name -> contiguous array) to this rank's shard file.

        Returns ``(file name, file size, {piece name: (byte_offset, byte_length, crcs)})``."""
        fname = shard_file_name(rank, save_id)
        flats = {k: np.ascontiguousarray(a).reshape(-1).view(np.uint8) for k, a in pieces.items()}
        data_len = sum(f.size for f in flats.values())
        out: dict = {}
        size = [0]

        def write(fh):
            st.write(fh, pieces, {"format": "pt", "shardflow.dcp.save_id": save_id})
            total = fh.tell()
            pos = total - data_len  # safetensors: the data section follows the header
            for k, flat in flats.items():
                out[k] = (pos, int(flat.size), block_crcs(memoryview(flat), self.block_size))
                pos += flat.size
            size[0] = total
            fh.flush()
            self.hook("shard_before_rename", rank)

        atomic_write(os.path.join(self.path, fname), write)
        return fname, size[0], out

    def write_index(self, index: dict, rank: int) -> None:
        raw = dumps_index(index)

        def write(fh):
            fh.write(raw)
            fh.flush()
            self.hook("index_before_rename", rank)

        atomic_write(os.path.join(self.path, INDEX_NAME), write)

    def remove_files(self, names) -> None:
        for name in names:
            if _SHARD.match(name):
                try:
                    os.unlink(os.path.join(self.path, name))
                except FileNotFoundError:
                    pass


class FileSystemReader(StorageReader):
    """Reads a sharded checkpoint from the folder ``path``; counts the bytes it reads."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.bytes_read = 0
        self._fds: dict[str, int] = {}

    def read_index(self) -> dict:
        p = os.path.join(self.path, INDEX_NAME)
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"checkpoint folder {self.path} does not exist")
        try:
            with open(p, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            shards = sorted(n for n in os.listdir(self.path) if _SHARD.match(n))
            what = (f"it holds {len(shards)} shard file(s) but no index: a save that was "
                    "interrupted before its commit" if shards else "it holds no shard files either")
            raise CheckpointError(
                f"{self.path} is not a sharded checkpoint: {INDEX_NAME} is missing ({what}). "
                "The index is written last, so a folder without one was never committed; load "
                "an earlier checkpoint"
            ) from None
        return loads_index(raw, p)

    def read_metadata(self) -> Metadata:
        """torch's ``Metadata`` of the checkpoint: every key, tensor sizes, dtypes, chunks."""
        return metadata_of(self.read_index())

    def _fd(self, fname: str) -> int:
        fd = self._fds.get(fname)
        if fd is None:
            try:
                fd = os.open(os.path.join(self.path, fname), os.O_RDONLY)
            except FileNotFoundError:
                raise CheckpointError(
                    f"{os.path.join(self.path, fname)} is missing; the index of {self.path} names "
                    "it, so the checkpoint folder is incomplete (a file was deleted or not copied)"
                ) from None
            self._fds[fname] = fd
        return fd

    def read_window(self, shard: dict, lo: int, hi: int, ranges, block_size: int,
                    what: str) -> np.ndarray:
        """Bytes ``[lo, hi)`` of a piece (offsets inside the piece; a uint8 array) in which
        every byte of ``ranges`` (``[(begin, end), ...]`` inside the window) is read and
        checksum-verified; the other bytes of the window are undefined.

        Only the ``block_size`` blocks that ``ranges`` touch are read (consecutive blocks in
        one ``pread``), and each is checked against the CRC-32 the index recorded."""
        out = np.empty(hi - lo, dtype=np.uint8)  # bytes outside ``ranges`` are never used
        omv = memoryview(out)
        touched = sorted({b for s, e in ranges if e > s
                          for b in range(s // block_size, (e - 1) // block_size + 1)})
        runs: list[list[int]] = []
        for b in touched:
            if runs and runs[-1][1] == b:
                runs[-1][1] = b + 1
            else:
                runs.append([b, b + 1])
        fd = self._fd(shard["file"])
        path = os.path.join(self.path, shard["file"])
        crcs = shard["crc32"]
        for first, stop in runs:
            b0, b1 = first * block_size, min(stop * block_size, shard["byte_length"])
            direct = b0 >= lo and b1 <= hi  # the blocks lie inside the window: no extra copy
            mv = omv[b0 - lo: b1 - lo] if direct else memoryview(bytearray(b1 - b0))
            got = os.preadv(fd, [mv], shard["byte_offset"] + b0)
            self.bytes_read += got
            if got != b1 - b0:
                raise CheckpointError(
                    f"{path} is truncated: {what} needs bytes up to {shard['byte_offset'] + b1} "
                    "of it, the file ends before. Use an earlier checkpoint"
                )
            for k in range(first, stop):
                pos = (k - first) * block_size
                crc = zlib.crc32(mv[pos: pos + block_size])
                if crc != crcs[k]:
                    end = shard["byte_offset"] + min(b0 + pos + block_size, b1)
                    raise CheckpointError(
                        f"{path} is corrupt: {what} (piece {shard['name']!r}), bytes "
                        f"{shard['byte_offset'] + b0 + pos}..{end} have CRC-32 {crc}, the index "
                        f"recorded {crcs[k]}. Use an earlier checkpoint"
                    )
            if not direct:
                c0, c1 = max(b0, lo), min(b1, hi)
                if c1 > c0:
                    omv[c0 - lo: c1 - lo] = mv[c0 - b0: c1 - b0]
        return out

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
