"""The safetensors file format, read and written with NumPy (no pickle anywhere).

Layout (https://github.com/huggingface/safetensors): 8-byte little-endian header length N,
N bytes of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}}`` padded with spaces to a multiple of 8, then the raw little-endian tensor
bytes. Files written by ``safetensors.torch.save_file`` load here and vice versa.

Checks on read, each failing with the file name: pickle / zip (``torch.save``) magic bytes
are refused; the header length must fit in the file; the header must be JSON of the shape
above; every dtype must be known; every tensor's byte range must lie inside the data
section and match ``prod(shape) * itemsize``; the data section must be as long as the
largest end offset (a truncated file fails here); when the writer stored a CRC-32 of the
data section (shardflow does, in ``__metadata__["shardflow.crc32"]``) it must match.

The header is checksummed too, so that a flipped bit in the metadata (a step number, a
config value, a tensor's shape) is caught and not loaded silently: shardflow writes
``__metadata__["shardflow.header_crc32"]``, ten decimal digits, the CRC-32 of the 8 length
bytes and the header bytes as written with those ten digits set to ``0``. A reader finds
the field in the raw bytes, zeroes the digits and recomputes. Files of other writers (and
of earlier shardflow versions) have no such field and get the other checks only.

Writes to a path are atomic (``atomic.py``): the bytes go to a locked temporary file in the
same folder, which is flushed and fsync'ed, then ``os.replace``d over the target, and the
folder is fsync'ed. A crash at any point leaves either the old file or the new one, never a
mix.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import ml_dtypes
import numpy as np

from .atomic import atomic_write

__all__ = ["write", "read", "CheckpointError", "CorruptCheckpointError", "EmptyCheckpointError",
           "atomic_write", "check_not_pickle", "is_raw_pickle"]

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U8": np.dtype("u1"), "U16": np.dtype("<u2"),
    "U32": np.dtype("<u4"), "U64": np.dtype("<u8"), "BOOL": np.dtype("?"),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn), "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "C64": np.dtype("<c8"),  # complex64: (re, im) float32 pairs, safetensors' C64 (0.6+)
}
_NAMES = {v: k for k, v in _DTYPES.items()}
_MAX_HEADER = 100 * 1024 * 1024
_HEADER_CRC = "shardflow.header_crc32"
_HEADER_CRC_FIELD = b'"' + _HEADER_CRC.encode() + b'":"'


class CheckpointError(ValueError):
    """A checkpoint file that cannot be (or must not be) loaded."""


class CorruptCheckpointError(CheckpointError, RuntimeError):
    """A file that is truncated, damaged or no checkpoint at all: a :class:`CheckpointError`
    and, as ``torch.load`` raises for such a file, a ``RuntimeError`` ("PytorchStreamReader
    failed reading zip archive ... your checkpoint file is corrupted"), so a program's
    ``except RuntimeError`` around a resume catches it (session 37: it was a ValueError only)."""


class EmptyCheckpointError(CorruptCheckpointError, EOFError):
    """An empty file: also the ``EOFError`` ``torch.load`` raises for one."""


def _dtype_name(a: np.ndarray, key: str) -> str:
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    try:
        return _NAMES[np.dtype(dt)]
    except KeyError:
        raise TypeError(
            f"cannot save tensor {key!r} of dtype {a.dtype}; safetensors stores "
            f"{', '.join(sorted(_DTYPES))}"
        ) from None


def write(f, arrays: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
    """Write ``arrays`` (name -> NumPy array) in safetensors format to the open binary ``f``."""
    entries, blobs, offset, crc = {}, [], 0, 0
    for name, a in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors tensor names must be str, got {name!r}")
        a = np.asarray(a)
        dname = _dtype_name(a, name)
        flat = np.ascontiguousarray(a, dtype=_DTYPES[dname]).reshape(-1).view(np.uint8)
        entries[name] = {"dtype": dname, "shape": list(a.shape),
                         "data_offsets": [offset, offset + flat.size]}
        offset += flat.size
        crc = zlib.crc32(flat, crc)
        blobs.append(flat)
    meta = dict(metadata or {})
    meta["shardflow.crc32"] = str(crc)
    meta[_HEADER_CRC] = "0" * 10
    for k, v in meta.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"safetensors metadata must map str to str, got {k!r}: {type(v).__name__}")
    header = {"__metadata__": meta, **entries}
    hb = bytearray(json.dumps(header, separators=(",", ":")).encode())
    hb += b" " * (-len(hb) % 8)
    size = struct.pack("<Q", len(hb))
    at = hb.index(_HEADER_CRC_FIELD) + len(_HEADER_CRC_FIELD)
    hb[at: at + 10] = b"%010d" % zlib.crc32(hb, zlib.crc32(size))
    f.write(size)
    f.write(hb)
    for b in blobs:
        f.write(b.data)


def is_raw_pickle(head: bytes) -> bool:
    """Whether the first 9 bytes of a file are a raw pickle stream's (``\\x80`` then a protocol
    number 1-5). A safetensors file starts with its header's length (8 bytes, little-endian)
    and then the header's ``{``: a header of 0x180, 0x280 ... 0x580 bytes (a few hundred
    tensor names) also starts ``\\x80 \\x01``..``\\x05``, so the ``{`` at byte 8 tells
    them apart (a pickle's byte 8 is inside an opcode's argument, never ``{`` for the
    streams torch.save or pickle.dump write). Before, such a checkpoint, written by
    shardflow's own ``save``, was refused as a pickle."""
    if len(head) < 2 or head[0] != 0x80 or not 1 <= head[1] <= 5:
        return False
    return not (len(head) >= 9 and head[8:9] == b"{" and head[2:8] == b"\x00" * 6)


def check_not_pickle(head: bytes, path: str) -> None:
    """Refuse PyTorch ``torch.save`` zip archives and raw pickles by their magic bytes
    (``head``: the file's first 9 bytes, see :func:`is_raw_pickle`)."""
    hint = (
        "pickle can run arbitrary code, so shardflow never loads it. Convert it once in "
        "PyTorch: `from safetensors.torch import save_file; "
        "save_file(torch.load(path, weights_only=True), 'model.safetensors')` and load that"
    )
    if head[:4] == b"PK\x03\x04":
        raise CheckpointError(
            f"{path} is a zip archive (PyTorch's torch.save format, which contains a pickle); {hint}"
        )
    if is_raw_pickle(head):
        raise CheckpointError(f"{path} is a Python pickle (protocol {head[1]}); {hint}")


def _check_header_crc(head: bytes, meta: dict, label: str) -> None:
    """Verify ``shardflow.header_crc32`` (see the module docstring) when the file has one."""
    recorded = meta.get(_HEADER_CRC) if isinstance(meta, dict) else None
    if recorded is None:
        return
    at = head.find(_HEADER_CRC_FIELD, 8)
    digits = head[at + len(_HEADER_CRC_FIELD): at + len(_HEADER_CRC_FIELD) + 10] if at >= 0 else b""
    if at < 0 or len(digits) != 10 or not digits.isdigit() or head.count(_HEADER_CRC_FIELD) != 1:
        raise CorruptCheckpointError(
            f"{label} is corrupt: its header checksum field is damaged ({recorded!r}); use an "
            "earlier checkpoint"
        )
    start = at + len(_HEADER_CRC_FIELD)
    crc = zlib.crc32(head[:start] + b"0" * 10 + head[start + 10:])
    if crc != int(digits):
        raise CorruptCheckpointError(
            f"{label} is corrupt: CRC-32 of its header (metadata, tensor names, shapes and "
            f"offsets) is {crc}, the file recorded {int(digits)}; a bit of the header changed "
            "after it was written (step, config or shapes may be wrong). Use an earlier "
            "checkpoint"
        )


def read(path_or_bytes, name: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a safetensors file (path or bytes): ``(name -> array, metadata)``, fully checked."""
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        buf = bytearray(path_or_bytes)
        label = name or "<bytes>"
    else:
        label = os.fspath(path_or_bytes)
        try:
            with open(label, "rb") as f:
                buf = bytearray(f.read())
        except FileNotFoundError:
            raise FileNotFoundError(f"checkpoint file {label} does not exist") from None
    size = len(buf)
    check_not_pickle(bytes(buf[:9]), label)
    if size < 8:
        raise (EmptyCheckpointError if size == 0 else CorruptCheckpointError)(
            f"{label} is truncated or not a safetensors file ({size} bytes)")
    (n,) = struct.unpack("<Q", bytes(buf[:8]))
    if n > size - 8 or n > _MAX_HEADER:
        raise CorruptCheckpointError(
            f"{label} is truncated or not a safetensors file: the header says {n} header bytes "
            f"but the file has {size} bytes in all"
        )
    try:
        header = json.loads(bytes(buf[8: 8 + n]).decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("header is not a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptCheckpointError(f"{label} is corrupt: its safetensors header is not valid JSON ({e})") from None
    meta = header.pop("__metadata__", None) or {}
    _check_header_crc(bytes(buf[: 8 + n]), meta, label)
    data_start = 8 + n
    data_len = size - data_start
    arrays, need = {}, 0
    for key, info in header.items():
        try:
            dt = _DTYPES[info["dtype"]]
            shape = tuple(int(s) for s in info["shape"])
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise CorruptCheckpointError(
                f"{label} is corrupt: bad header entry for tensor {key!r}: {info!r}"
            ) from None
        count = int(np.prod(shape, dtype=np.int64))
        if begin < 0 or end < begin or end - begin != count * dt.itemsize or min(shape, default=0) < 0:
            raise CorruptCheckpointError(
                f"{label} is corrupt: tensor {key!r} of shape {list(shape)} and dtype "
                f"{info['dtype']} cannot occupy bytes [{begin}, {end})"
            )
        need = max(need, end)
        arrays[key] = (dt, shape, begin, count)
    if need > data_len:
        raise CorruptCheckpointError(
            f"{label} is truncated: its header promises {need} bytes of tensor data but only "
            f"{data_len} are present; the write was interrupted or the copy is incomplete — use "
            "an earlier checkpoint"
        )
    view = memoryview(buf)[data_start: data_start + need]
    if "shardflow.crc32" in meta:
        crc = zlib.crc32(view)
        if str(crc) != meta["shardflow.crc32"]:
            raise CorruptCheckpointError(
                f"{label} is corrupt: CRC-32 of its tensor data is {crc}, the file recorded "
                f"{meta['shardflow.crc32']}; use an earlier checkpoint"
            )
    out = {}
    for key, (dt, shape, begin, count) in arrays.items():
        a = np.frombuffer(buf, dtype=dt, count=count, offset=data_start + begin).reshape(shape)
        out[key] = a.copy() if a.ctypes.data % max(dt.alignment, 1) else a
    return out, meta
