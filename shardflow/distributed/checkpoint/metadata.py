"""The index of a sharded checkpoint (``index.json``) and the flattening of state dicts.

A state dict is any nesting of dicts (str or int keys) whose leaves are tensors (shardflow
Tensors, global or plain, and NumPy arrays) or other values (numbers, strings, lists,
tuples, None, dtypes: the step count, LR scheduler and RNG state ...). :func:`flatten`
names each leaf by its path's parts joined with ``.`` (``model.fc.weight``,
``optim.state.fc.weight.exp_avg``), PyTorch DCP's flattened FQNs. Lists and tuples are
leaves; a list holding tensors is refused (put them in a dict).

``index.json`` (written last, atomically; its presence is the commit marker)::

    {"format": "shardflow.dcp/1", "save_id": "3f9c0a1e", "world_size": 2,
     "block_size": 1048576,                     # bytes per CRC-32 block
     "files": {"__0_3f9c0a1e.safetensors": {"rank": 0, "bytes": 4096}, ...},
     "tensors": {"model.fc.weight": {
         "path": ["model", "fc.weight"], "shape": [8, 4], "dtype": "F32",
         "saved_as": {"placement": [0, 1], "sbp": ["S(0)"]},   # or null: a plain tensor
         "shards": [{"offsets": [0, 0], "lengths": [4, 4], "file": "__0_3f9c0a1e.safetensors",
                     "name": "model.fc.weight@0,0", "byte_offset": 128, "byte_length": 64,
                     "crc32": [2712345678]}, ...]}},
     "objects": {"step": {"path": ["step"], "value": 10}, ...},
     "index_crc32": 1234567890}

``byte_offset`` is from the start of the shard file (a reader seeks there directly);
``crc32`` holds one CRC-32 per ``block_size`` bytes of the shard, so a rank that reads part
of a shard verifies exactly the blocks it read. ``index_crc32`` is the CRC-32 of the index
serialized without that field (sorted keys, no spaces). Object values use the typed JSON of
:mod:`shardflow.checkpoint.io` (int dict keys and tuples come back as they were).
"""

from __future__ import annotations

import json
import zlib

import numpy as np

from ...autograd import Tensor
from ...checkpoint.io import _flatten as _encode_value
from ...checkpoint.io import _unflatten as _decode_value
from ...checkpoint.safetensors import CheckpointError
from .storage import (  # noqa: F401  (torch's path: torch.distributed.checkpoint.metadata)
    BytesStorageMetadata,
    ChunkStorageMetadata,
    Metadata,
    TensorProperties,
    TensorStorageMetadata,
)

__all__ = ["FORMAT", "INDEX_NAME", "flatten", "encode_object", "decode_object",
           "dumps_index", "loads_index", "CheckpointError", "CheckpointException"]



class CheckpointException(CheckpointError):
    """torch's name for a save or load that failed on some ranks (every rank raises it, with
    the same message); ``failures`` maps each failing rank to its error text. Unlike torch's
    (a ``BaseException``), it is an ``Exception`` (a ``CheckpointError``, a ``ValueError``)."""

    def __init__(self, msg: str, failures: dict | None = None):
        super().__init__(msg)
        self._failures = dict(failures or {})

    @property
    def failures(self) -> dict:
        return self._failures


FORMAT = "shardflow.dcp/1"
INDEX_NAME = "index.json"


def put_nested(out: dict, path, value) -> None:
    """``out[path[0]][path[1]]...[path[-1]] = value``, making the inner dicts on the way (a
    checkpoint index entry's ``path`` back into a nested state dict)."""
    node = out
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = value


def _is_tensor(v) -> bool:
    return isinstance(v, Tensor | np.ndarray)


def _has_tensor(v) -> bool:
    if _is_tensor(v):
        return True
    if isinstance(v, dict):
        return any(_has_tensor(x) for x in v.values())
    if isinstance(v, list | tuple):
        return any(_has_tensor(x) for x in v)
    return False


def flatten(state_dict) -> dict[str, tuple[tuple, object]]:
    """``{name: (path, leaf)}`` for every leaf of ``state_dict`` (see the module docstring)."""
    if not isinstance(state_dict, dict):
        raise TypeError(
            f"a sharded checkpoint saves a dict (a state dict), got {type(state_dict).__name__}; "
            "wrap it: {'model': model.state_dict()}"
        )
    out: dict[str, tuple[tuple, object]] = {}

    def walk(node, path):
        if isinstance(node, dict) and (node or not path):
            for k, v in node.items():
                if isinstance(k, bool) or not isinstance(k, str | int):
                    raise TypeError(
                        f"state dict key {k!r} at {'.'.join(map(str, path)) or '<root>'} must be "
                        "a str or an int"
                    )
                walk(v, path + (k,))
            return
        if isinstance(node, list | tuple) and _has_tensor(node):
            raise TypeError(
                f"{'.'.join(map(str, path))} is a {type(node).__name__} holding tensors; a sharded "
                "checkpoint names each tensor by its dict path, so put them in a dict "
                "({'0': t0, '1': t1})"
            )
        name = ".".join(map(str, path))
        if name in out:
            raise ValueError(
                f"two entries of the state dict flatten to the same name {name!r} (paths "
                f"{out[name][0]} and {path}); rename one of the keys"
            )
        out[name] = (path, node)

    walk(state_dict, ())
    return out


def encode_object(value, name: str):
    """Typed JSON of a non-tensor leaf (no pickle); a clear error for what JSON cannot hold."""
    arrays: dict = {}
    enc = _encode_value(value, [name], arrays)
    assert not arrays
    return enc


def decode_object(enc, label: str):
    return _decode_value(enc, {}, label)


def _crc(obj: dict) -> int:
    body = {k: v for k, v in obj.items() if k != "index_crc32"}
    return zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def dumps_index(index: dict) -> bytes:
    index = dict(index)
    index["index_crc32"] = _crc(index)
    return json.dumps(index, sort_keys=True, separators=(",", ":")).encode()


def loads_index(raw: bytes, label: str) -> dict:
    """Parse and verify an ``index.json``; :class:`CheckpointError` naming ``label`` if bad."""
    try:
        index = json.loads(raw.decode("utf-8"))
        if not isinstance(index, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(
            f"{label} is corrupt: not valid JSON ({e}); the index is written atomically, so the "
            "file was damaged after the save. Use an earlier checkpoint"
        ) from None
    if index.get("format") != FORMAT:
        raise CheckpointError(
            f"{label} is not a shardflow sharded-checkpoint index (format "
            f"{index.get('format')!r}, expected {FORMAT!r})"
        )
    got, want = index.get("index_crc32"), _crc(index)
    if got != want:
        raise CheckpointError(
            f"{label} is corrupt: CRC-32 of the index is {want}, it recorded {got}; a byte "
            "changed after the save. Use an earlier checkpoint"
        )
    return index
