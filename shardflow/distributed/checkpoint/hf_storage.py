"""``HuggingFaceStorageWriter`` / ``HuggingFaceStorageReader``: :func:`~.save` and
:func:`~.load` on a Hugging Face safetensors folder (PyTorch DCP's ``hf_storage`` names).

Layout (torch's, what ``transformers`` reads): ``model-00001-of-0000N.safetensors`` files of
whole tensors under their flattened names, and ``model.safetensors.index.json``
(``{"metadata": {"total_size": bytes}, "weight_map": {name: file}}``). ``fqn_to_index_mapping``
(name -> 1-based file number) spreads the tensors over files; by default all go to file 1.

Save (a collective, every rank with the same keys): each tensor is made whole in sorted name
order (a global tensor: one all-gather of its shards, ``full_state._full_array``; a plain
tensor is taken as replicated), rank 0 writes the files (each atomically) and the index, then
broadcasts the outcome (``broadcast_object``) so every rank returns or raises the same error.
Only tensors are saved: another value (a step count) is refused by name before anything is
written; keep it in a ``FileSystemWriter`` checkpoint.

Load: every rank reads the index (or, without one, every ``*.safetensors`` file of the
folder), checks each key's shape and takes its part: a global tensor its shard
(``layout.take``), a plain one the whole value, cast to the target dtype. Errors are agreed
over the group (one ``all_gather_object``) before any tensor changes, so a failed load
leaves every rank's state untouched. ``allow_partial_load`` skips keys the files lack.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ...backend.xp import get_array_module
from ...checkpoint import atomic_write
from ...checkpoint import safetensors as st
from .. import layout
from ..full_state import _full_array
from .metadata import CheckpointError, CheckpointException, flatten
from .regions import spec_of
from .storage import Metadata, StorageReader, StorageWriter, metadata_of

__all__ = ["HuggingFaceStorageWriter", "HuggingFaceStorageReader", "save_hf", "load_hf"]

INDEX_NAME = "model.safetensors.index.json"


def file_name(i: int, n: int) -> str:
    return f"model-{i:05d}-of-{n:05d}.safetensors"


class HuggingFaceStorageWriter(StorageWriter):
    """Writes Hugging Face safetensors files into the folder ``path`` (module docstring).
    ``thread_count``, ``save_distributed``, ``enable_consolidation`` and
    ``thread_count_consolidation`` are torch's and accepted: the files are always whole
    tensors (consolidated), written by rank 0."""

    def __init__(self, path: str, fqn_to_index_mapping: dict | None = None,
                 thread_count: int = 1, save_distributed: bool = False,
                 enable_consolidation: bool = False, thread_count_consolidation: int = 1):
        self.path = os.fspath(path)
        self.fqn_to_index_mapping = fqn_to_index_mapping


class HuggingFaceStorageReader(StorageReader):
    """Reads the Hugging Face safetensors files of the folder ``path`` (module docstring)."""

    def __init__(self, path: str, thread_count: int = 1):
        self.path = os.fspath(path)

    def weight_map(self) -> dict:
        """name -> file name, from the index, or from the files' headers when there is none."""
        index = os.path.join(self.path, INDEX_NAME)
        if os.path.exists(index):
            with open(index) as f:
                return dict(json.load(f)["weight_map"])
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"checkpoint folder {self.path} does not exist")
        out = {}
        for fname in sorted(os.listdir(self.path)):
            if fname.endswith(".safetensors"):
                arrays, _ = st.read(os.path.join(self.path, fname))
                out.update(dict.fromkeys(arrays, fname))
        return out

    def read_metadata(self) -> Metadata:
        """torch's ``Metadata``: every tensor's size and dtype (one chunk each: whole)."""
        tensors = {}
        for name, fname in self.weight_map().items():
            a = self._arrays(fname)[name]
            tensors[name] = {"shape": list(a.shape), "dtype": st._dtype_name(a, name),
                             "shards": [{"offsets": [0] * a.ndim, "lengths": list(a.shape)}]}
        return metadata_of({"tensors": tensors, "objects": {}, "format": "hf-safetensors"})

    def _arrays(self, fname: str) -> dict:
        cache = self.__dict__.setdefault("_cache", {})
        if fname not in cache:
            cache[fname] = st.read(os.path.join(self.path, fname))[0]
        return cache[fname]

    def close(self) -> None:
        self.__dict__.pop("_cache", None)


def _host(a) -> np.ndarray:
    get = getattr(a, "get", None)  # a CuPy array: copy to the host
    return np.asarray(get() if get is not None else a)


def save_hf(state_dict, writer: HuggingFaceStorageWriter, group) -> dict:
    """Save ``state_dict``'s tensors as Hugging Face safetensors files (module docstring);
    returns ``{"weight_map": ..., "total_size": ...}``."""
    flat = flatten(state_dict)
    not_tensors = [n for n, (_, v) in flat.items() if not (hasattr(v, "array")
                                                         or isinstance(v, np.ndarray))]
    if not_tensors:
        raise ValueError(
            f"HuggingFaceStorageWriter saves tensors only; {not_tensors[:5]} are other values. "
            "Leave them out of this state dict, or save everything with FileSystemWriter"
        )
    mapping = writer.fqn_to_index_mapping or {}
    missing = sorted(set(flat) - set(mapping)) if mapping else []
    if missing:
        raise ValueError(f"HuggingFaceStorageWriter: fqn_to_index_mapping has no file number "
                         f"for {missing[:5]}; give every tensor one (1-based)")
    whole = {}
    for name in sorted(flat):
        leaf = flat[name][1]
        spec = spec_of(leaf)
        arr = leaf if isinstance(leaf, np.ndarray) else leaf.array
        whole[name] = _host(_full_array(arr, spec) if spec is not None else arr)  # all ranks
    outcome = None
    if group.rank == 0:
        try:
            outcome = {"ok": True, "result": _write_files(writer, whole, mapping)}
        except Exception as e:  # given to every rank below
            outcome = {"ok": False, "error": f"rank 0: {type(e).__name__}: {e}"}
    outcome = group.broadcast_object(outcome, 0)
    if not outcome["ok"]:
        raise CheckpointException("dcp.save (HuggingFaceStorageWriter): " + outcome["error"],
                                  {0: outcome["error"]})
    return outcome["result"]


def _write_files(writer, whole: dict, mapping: dict) -> dict:
    n = max(mapping.values(), default=1)
    files: dict[int, dict] = {}
    for name, a in whole.items():
        files.setdefault(int(mapping.get(name, 1)), {})[name] = a
    os.makedirs(writer.path, exist_ok=True)
    weight_map, total = {}, 0
    for i in sorted(files):
        fname = file_name(i, n)
        atomic_write(os.path.join(writer.path, fname),
                     lambda fh, arrays=files[i]: st.write(fh, arrays, {"format": "pt"}))
        for name, a in files[i].items():
            weight_map[name] = fname
            total += a.nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    raw = json.dumps(index, indent=2).encode()
    atomic_write(os.path.join(writer.path, INDEX_NAME), lambda fh: fh.write(raw))
    return {"weight_map": index["weight_map"], "total_size": total}


def load_hf(state_dict, reader: HuggingFaceStorageReader, group,
            allow_partial_load: bool = False) -> None:
    """Fill ``state_dict``'s tensors from Hugging Face safetensors files (module docstring)."""
    staged, err = [], None
    try:
        weight_map = reader.weight_map()
        for name, (_, leaf) in flatten(state_dict).items():
            if name not in weight_map:
                if allow_partial_load:
                    continue
                raise CheckpointError(
                    f"{reader.path}: {name!r} of the state dict is not in the checkpoint (its "
                    f"tensors: {sorted(weight_map)[:6]}); pass "
                    "planner=DefaultLoadPlanner(allow_partial_load=True) to skip missing keys"
                )
            if not (hasattr(leaf, "array") or isinstance(leaf, np.ndarray)):
                raise CheckpointError(f"{reader.path}: {name!r} is a tensor in the checkpoint "
                                      f"but a {type(leaf).__name__} in the state dict")
            value = reader._arrays(weight_map[name])[name]
            spec = spec_of(leaf)
            shape = tuple(spec.shape) if spec is not None else tuple(np.shape(leaf))
            if tuple(value.shape) != shape:
                raise CheckpointError(f"{reader.path}: tensor {name!r} was saved with shape "
                                      f"{tuple(value.shape)}, the state dict's has {shape}")
            if spec is not None:
                if any(s.is_partial() for s in spec.sbp):
                    raise CheckpointError(f"{name!r} is a partial-sum tensor; load it as "
                                          "replicated or split and redistribute")
                index = layout.local_index(spec.shape, spec.placement.shape,
                                           spec.placement.coordinate, spec.sbp)
                value = layout.take(value, index)
            staged.append((leaf, value))
    except (CheckpointError, OSError, ValueError, KeyError) as e:
        err = f"rank {group.rank}: {type(e).__name__}: {e}"
    finally:
        reader.close()
    errs = {r: e for r, e in enumerate(group.all_gather_object(err)) if e}
    if errs:
        raise CheckpointException("dcp.load (HuggingFaceStorageReader) failed, nothing was "
                                  "loaded: " + "; ".join(dict.fromkeys(errs.values())), errs)
    for leaf, value in staged:
        if isinstance(leaf, np.ndarray):
            leaf[...] = value.astype(leaf.dtype, copy=False)
            continue
        xp = get_array_module(leaf.array)
        leaf.array[...] = xp.asarray(np.asarray(value).astype(leaf.array.dtype, copy=False))
        leaf._bump_version()
