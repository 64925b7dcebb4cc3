"""One safetensors file from a sharded checkpoint, and back (``shardflow checkpoint``).

``dcp_to_safetensors(folder, out)`` (PyTorch: ``format_utils.dcp_to_torch_save``) assembles
every tensor whole from its pieces (each piece read once, its CRC-32 blocks verified) and
rebuilds the nested state dict from the index's paths, non-tensor values included; it is
written with :func:`shardflow.save` (atomic), so ``shardflow.load(out)`` returns the state
dict that was saved, with whole tensors (``load(out)["model"]`` loads into a plain model).

``safetensors_to_dcp(path, folder)`` (PyTorch: ``torch_save_to_dcp``) is the reverse: a file
written by ``shardflow.save`` (or any safetensors file) becomes a one-rank sharded
checkpoint, which :func:`~.load` then reshards into any layout. Both run in one process.
"""

from __future__ import annotations

import os

import numpy as np

from ...autograd import _wrap
from ...checkpoint import load as _load_file
from ...checkpoint import save as _save_file
from .filesystem import FileSystemReader, FileSystemWriter, dtype_of
from .metadata import decode_object, put_nested
from .saver import save

__all__ = ["dcp_to_safetensors", "safetensors_to_dcp", "read_full"]


def read_full(folder) -> dict:
    """The whole state dict of a sharded checkpoint, in this process (no communication)."""
    reader = FileSystemReader(folder)
    index = reader.read_index()
    bs = index["block_size"]
    out: dict = {}

    # the saved state dict's key order when the index has it (older ones: tensors, then
    # other values, each sorted)
    known = [*index["tensors"], *index["objects"]]
    order = [k for k in index.get("order", ()) if k in index["tensors"] or k in index["objects"]]
    order += [k for k in known if k not in set(order)]
    try:
        for name in order:
            if name in index["objects"]:
                e = index["objects"][name]
                put_nested(out, e["path"], decode_object(e["value"], reader.path))
                continue
            e = index["tensors"][name]
            dt = dtype_of(e["dtype"])
            full = np.zeros(tuple(e["shape"]), dtype=dt)
            for sh in e["shards"]:
                n = sh["byte_length"]
                raw = reader.read_window(sh, 0, n, [(0, n)], bs, f"tensor {name!r}")
                piece = raw.view(dt).reshape(tuple(sh["lengths"]))
                full[tuple(slice(o, o + n) for o, n in zip(sh["offsets"], sh["lengths"]))] = piece
            put_nested(out, e["path"], _wrap(full))
    finally:
        reader.close()
    return out


def dcp_to_safetensors(folder, out_path) -> dict:
    """Write the sharded checkpoint ``folder`` as one safetensors file; returns the state dict."""
    state = read_full(folder)
    _save_file(state, os.fspath(out_path))
    return state


def safetensors_to_dcp(path, folder, *, block_size: int | None = None) -> dict:
    """Make a one-rank sharded checkpoint in ``folder`` from the safetensors file ``path``."""
    state = _load_file(os.fspath(path))
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds a {type(state).__name__}; a sharded checkpoint needs a dict")
    kw = {} if block_size is None else {"block_size": block_size}
    return save(state, storage_writer=FileSystemWriter(folder, **kw), no_dist=True, _note=False)
