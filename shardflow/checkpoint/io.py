"""``shardflow.save`` / ``shardflow.load``: nested state dicts in one safetensors file.

A checkpoint is any nesting of dicts, lists and tuples whose leaves are Tensors, NumPy
arrays, numbers, strings, bools, None or dtypes (model state dict, optimizer state with
its int keys, scheduler state, RNG state, step counter ...). ``save`` walks it once:

* every Tensor / array becomes a safetensors tensor named by its path, the path's parts
  joined with ``/`` (``model/fc.weight``, ``optimizer/state/0/exp_avg``); ``%`` and ``/``
  inside a key are escaped as ``%25`` / ``%2F``. A flat ``{str: Tensor}`` dict (a model's
  state dict) therefore has exactly its own keys as tensor names, and the file is an
  ordinary safetensors file that ``safetensors.torch.load_file`` reads;
* a Parameter is marked as one (with its ``requires_grad``) and a tensor that requires grad
  is marked so, in the structure below, so ``load`` gives them back as ``torch.load`` does
  (a non-leaf tensor that requires grad loads as a leaf that does, as in torch);
* everything else is kept in a JSON description of the structure (with typed dict keys,
  so ``{0: ...}`` comes back with an int key, tuples stay tuples and an ``OrderedDict``,
  every ``state_dict()``, stays one, with its ``_metadata`` of module versions, which
  ``load_state_dict`` reads as torch's does) stored in the
  safetensors header's ``__metadata__["shardflow.structure"]`` — the JSON sidecar lives
  inside the file, so one atomic rename publishes tensors and metadata together.

Nothing is ever pickled. ``load`` of a file without that metadata (e.g. written by
``safetensors.torch.save_file``) returns ``{name: Tensor}``. Refusals (pickle files,
truncation, corruption) are explained in ``safetensors.py``.

``save_model`` / ``load_model`` mirror ``safetensors.torch``; ``load_model`` checks every key
and shape against the model before touching any parameter and names the file in its error.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections import OrderedDict

import numpy as np

from ..autograd.tensor import Tensor, _wrap
from ..backend import dtypes as _dtypes
from ..comm.base import CommError
from . import safetensors as st
from .safetensors import CheckpointError

__all__ = ["save", "load", "save_file", "load_file", "save_model", "load_model",
           "find_latest", "scan_checkpoints", "checkpoint_files", "skipped_message",
           "CheckpointError", "CheckpointSkippedWarning", "NotPlainDataError"]

_FORMAT = "shardflow.checkpoint/1"


class NotPlainDataError(TypeError):
    """``save`` met a value a safetensors checkpoint cannot hold (raised before writing)."""


def _esc(k: str) -> str:
    return k.replace("%", "%25").replace("/", "%2F")


def _key(k):
    if isinstance(k, bool):
        return {"b": k}
    if isinstance(k, str):
        return k
    if isinstance(k, int | np.integer):
        return {"i": int(k)}
    if isinstance(k, float):
        return {"f": k}
    if k is None:
        return {"n": None}
    raise NotPlainDataError(f"cannot save a dict key of type {type(k).__name__} ({k!r}); use str or int keys")


def _unkey(k):
    if isinstance(k, str):
        return k
    (tag, v), = k.items()
    return v


def _whole_array(t: Tensor, name: str) -> np.ndarray:
    """The tensor's whole value. A global tensor's is gathered from every rank of its
    placement (a collective): a save called on one rank only fails in that gather, and the
    error then says why and what to do instead."""
    if t._spec is None:
        return t.numpy()
    try:
        return t.numpy()
    except CommError as e:
        raise CommError(
            f"{e}\n(shardflow.save: {name!r} is a global tensor with sbp {t.sbp}; saving it "
            "gathers its pieces from every rank of its placement, so every rank must call save. "
            "To save from one rank, save plain tensors: t.to_local() for this rank's piece, or a "
            "full state dict gathered on every rank first, e.g. get_model_state_dict(model, "
            "options=StateDictOptions(full_state_dict=True)) or {k: v.full_tensor() ...})"
        ) from e


def _flatten(obj, path: list[str], arrays: dict):
    name = "/".join(_esc(p) for p in path) or "_"
    # COO (is_sparse) or CSR/CSC (a layout other than strided): torch.save's pickle holds it
    if isinstance(obj, Tensor) and (obj.is_sparse or obj.layout.name in ("sparse_csr", "sparse_csc")):
        raise NotPlainDataError(f"a sparse tensor at {name!r} is pickled, not stored as safetensors")
    if isinstance(obj, Tensor):
        arrays[name] = _whole_array(obj, name)
        if arrays[name].dtype == np.complex128:  # safetensors has C64 only: torch.save's pickle
            raise NotPlainDataError(f"a complex128 tensor at {name!r} is pickled (safetensors has "
                                    "no complex128)")
        from ..nn.parameter import Parameter  # here, not at the top: nn imports checkpoint's users

        if isinstance(obj, Parameter):
            return {"T": name, "P": int(obj.requires_grad)}
        return {"T": name, "R": 1} if obj.requires_grad else {"T": name}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "OSU":
            raise NotPlainDataError(f"cannot save a NumPy array of dtype {obj.dtype} at {name!r}")
        arrays[name] = obj
        return {"A": name}
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            return {"F": repr(obj)}
        return obj
    if isinstance(obj, np.generic):
        if obj.dtype.kind == "V":  # bfloat16 scalar: keep the value as a float32
            return {"S": "<f4", "v": float(obj)}
        return {"S": obj.dtype.str, "v": obj.item()}
    if isinstance(obj, _dtypes.dtype):
        return {"D": obj.name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            items.append([_key(k), _flatten(v, path + [str(k)], arrays)])
        # an OrderedDict (every state_dict()) loads back as one, as from torch.load
        if not isinstance(obj, OrderedDict):
            return {"M": items}
        node = {"O": items}
        metadata = getattr(obj, "_metadata", None)
        if metadata is not None:  # a state dict's per-module versions, kept as torch's pickle keeps them
            node["m"] = _module_metadata(metadata, name)
        return node
    if isinstance(obj, tuple):
        return {"U": [_flatten(v, path + [str(i)], arrays) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_flatten(v, path + [str(i)], arrays) for i, v in enumerate(obj)]
    raise NotPlainDataError(
        f"cannot save an object of type {type(obj).__name__} at {name!r}: a checkpoint holds "
        "tensors, arrays, numbers, strings, None, dtypes, lists, tuples and dicts (no pickle); "
        "convert it to one of those, e.g. call its state_dict()"
    )


def _module_metadata(metadata, name: str) -> list:
    """A state dict's ``_metadata`` (``{module prefix: {"version": 2}}``) as JSON pairs;
    anything JSON cannot hold sends the checkpoint to the pickle format, which keeps it."""
    pairs = [[str(k), dict(v)] for k, v in metadata.items()]
    try:
        json.dumps(pairs)
    except (TypeError, ValueError):
        raise NotPlainDataError(f"the state dict at {name!r} has _metadata JSON cannot hold") from None
    return pairs


def _with_metadata(od: OrderedDict, source) -> OrderedDict:
    metadata = getattr(source, "_metadata", None)
    if metadata is not None:
        od._metadata = metadata
    return od


def _unflatten(node, arrays: dict, label: str):
    if isinstance(node, list):
        return [_unflatten(v, arrays, label) for v in node]
    if not isinstance(node, dict):
        return node
    (tag, v), *rest = node.items()
    if tag in ("T", "A"):
        if v not in arrays:
            raise CheckpointError(f"{label} is corrupt: its structure names tensor {v!r}, which is missing")
        return _tensor(arrays[v], node) if tag == "T" else arrays[v]
    if tag == "M":
        return {_unkey(k): _unflatten(x, arrays, label) for k, x in v}
    if tag == "O":
        od = OrderedDict((_unkey(k), _unflatten(x, arrays, label)) for k, x in v)
        if "m" in node:
            od._metadata = OrderedDict((k, dict(m)) for k, m in node["m"])
        return od
    if tag == "U":
        return tuple(_unflatten(x, arrays, label) for x in v)
    if tag == "F":
        return float(v)
    if tag == "D":
        return _dtypes.as_dtype(v)
    if tag == "S":
        return np.dtype(v).type(node["v"])
    raise CheckpointError(f"{label} is corrupt: unknown structure tag {tag!r}")


def _tensor(array, node: dict):
    """The tensor a ``{"T": name, ...}`` node names, as torch.load gives it back: a Parameter
    stays one (``"P"``: its requires_grad), a tensor that required grad requires it again
    (``"R"``); older files have neither and give plain tensors."""
    t = _wrap(array)
    if "P" in node:
        from ..nn.parameter import Parameter

        return Parameter(t, requires_grad=bool(node["P"]))
    if node.get("R") and (t.is_floating_point() or t.is_complex()):
        t.requires_grad_(True)
    return t


def save(obj, f, *, metadata: dict[str, str] | None = None) -> None:
    """Save ``obj`` (a state dict, possibly nested) to path ``f`` (atomically) or a binary file.

    The file is a standard safetensors file; see the module docstring."""
    arrays: dict[str, np.ndarray] = {}
    structure = _flatten(obj, [], arrays)
    meta = dict(metadata or {})
    meta["format"] = meta.get("format", "pt")  # what safetensors.torch expects to see
    meta["shardflow.format"] = _FORMAT
    meta["shardflow.structure"] = json.dumps(structure, separators=(",", ":"))
    if hasattr(f, "write"):
        st.write(f, arrays, meta)
    else:
        st.atomic_write(os.fspath(f), lambda fh: st.write(fh, arrays, meta))


def load(f, map_location=None, *, weights_only: bool = True, mmap=None):
    """Load what ``save`` wrote (or any safetensors file, as ``{name: Tensor}``).

    ``map_location`` ('cpu', 'cuda', a device) moves tensors; ``weights_only`` is accepted for
    PyTorch compatibility and always effectively True (nothing is unpickled)."""
    if hasattr(f, "read"):
        arrays, meta = st.read(f.read(), getattr(f, "name", None))
        label = getattr(f, "name", "<file object>")
    else:
        label = os.fspath(f)
        arrays, meta = st.read(label)
    if "shardflow.structure" in meta:
        try:
            structure = json.loads(meta["shardflow.structure"])
        except ValueError as e:
            raise CheckpointError(f"{label} is corrupt: bad structure metadata ({e})") from None
        out = _unflatten(structure, arrays, label)
    else:
        out = {k: _wrap(v) for k, v in arrays.items()}
    if map_location is not None and str(map_location) != "cpu":
        out = _map(out, map_location)
    return out


def _map(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, OrderedDict):
        return _with_metadata(OrderedDict((k, _map(v, device)) for k, v in obj.items()), obj)
    if isinstance(obj, dict):
        return {k: _map(v, device) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_map(v, device) for v in obj)
    return obj


def save_file(tensors: dict, filename, metadata: dict[str, str] | None = None) -> None:
    """``safetensors.torch.save_file``: a flat ``{str: Tensor}`` dict, written atomically."""
    arrays = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor | np.ndarray):
            raise TypeError(f"save_file expects Tensors, got {type(v).__name__} for key {k!r}; use save()")
        arrays[k] = v.numpy() if isinstance(v, Tensor) else v
    meta = {"format": "pt", **(metadata or {})}
    st.atomic_write(os.fspath(filename), lambda fh: st.write(fh, arrays, meta))


def load_file(filename, device="cpu") -> dict:
    """``safetensors.torch.load_file``: ``{name: Tensor}``."""
    arrays, _ = st.read(os.fspath(filename))
    out = {k: _wrap(v) for k, v in arrays.items()}
    return out if str(device) == "cpu" else _map(out, device)


def save_model(model, filename, metadata: dict[str, str] | None = None) -> None:
    save_file(model.state_dict(), filename, metadata)


def load_model(model, filename, strict: bool = True, device="cpu"):
    """Load a safetensors file into ``model``: every key and shape is checked against the
    model first (error names the file, the key, expected and found shapes); only then are
    parameters written. Returns ``(missing, unexpected)`` keys like PyTorch."""
    label = os.fspath(filename)
    state = load_file(label, device)
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if strict and (missing or unexpected):
        raise CheckpointError(
            f"{label} does not match {type(model).__name__}: missing keys {missing[:10]}"
            f"{' ...' if len(missing) > 10 else ''}, unexpected keys {unexpected[:10]}"
            f"{' ...' if len(unexpected) > 10 else ''}; was it saved from the same architecture "
            "and config? (strict=False loads the keys that match)"
        )
    for k, v in state.items():
        if k in own and tuple(own[k].shape) != tuple(v.shape):
            raise CheckpointError(
                f"{label}: tensor {k!r} has shape {list(v.shape)} in the file but the model "
                f"expects {list(own[k].shape)}; build the model with the config it was saved from"
            )
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=strict)
    return missing, unexpected


_STEP = re.compile(r"(\d+)")


class CheckpointSkippedWarning(UserWarning):
    """A newer checkpoint did not load and an older one was used (or none)."""


def checkpoint_files(folder, prefix: str = "ckpt_", suffix: str = ".safetensors") -> list[str]:
    """The checkpoint files in ``folder`` (``prefix<step>suffix``), newest (highest step) first;
    nothing is read."""
    if not os.path.isdir(folder):
        return []
    cands = []
    for name in os.listdir(folder):
        if name.startswith(prefix) and name.endswith(suffix):
            m = _STEP.search(name[len(prefix): len(name) - len(suffix)])
            if m:
                cands.append((int(m.group(1)), os.path.join(folder, name)))
    return [path for _, path in sorted(cands, reverse=True)]


def scan_checkpoints(folder, prefix: str = "ckpt_", suffix: str = ".safetensors"):
    """``(path, skipped)``: the newest checkpoint in ``folder`` (highest step number in the
    name) that passes every check of a full read, or None, and ``[(newer_path, reason)]``
    for each newer file that failed (truncated, corrupt, unreadable), newest first."""
    skipped = []
    for path in checkpoint_files(folder, prefix, suffix):
        try:
            st.read(path)
        except (CheckpointError, OSError) as e:
            skipped.append((path, str(e)))
            continue
        return path, skipped
    return None, skipped


def skipped_message(path: str, reason: str, loaded: str | None) -> str:
    """One line for a skipped checkpoint: which file, why, and what was used instead."""
    instead = f"using {loaded} instead" if loaded else "no older checkpoint loads either"
    if reason.startswith(path):  # the reader's messages start with the file name
        reason = "it" + reason[len(path):]
    return f"skipped checkpoint {path}: {reason}; {instead}"


def find_latest(folder, prefix: str = "ckpt_", suffix: str = ".safetensors", *, on_skip=None):
    """The checkpoint in ``folder`` with the highest step number that loads cleanly, or None.

    A newer file that fails to load is skipped, and said so: ``on_skip(message)`` is called
    once per skipped file (the message names the file, the reason and the file used
    instead); without ``on_skip`` a :class:`CheckpointSkippedWarning` is issued."""
    path, skipped = scan_checkpoints(folder, prefix, suffix)
    for bad, reason in skipped:
        msg = skipped_message(bad, reason, path)
        if on_skip is not None:
            on_skip(msg)
        else:
            warnings.warn(msg, CheckpointSkippedWarning, stacklevel=2)
    return path
