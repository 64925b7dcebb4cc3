"""``load_sharded_optimizer_state_dict`` (PyTorch DCP's ``optimizer`` module): the optimizer
state saved under ``optimizer_key``, each state tensor laid out like its parameter.

Algorithm: read the checkpoint's index (no tensor bytes); for every saved entry under
``optimizer_key`` build a target: a state tensor ``<optimizer_key>.state.<fqn>.<name>``
whose shape is that of ``model_state_dict[fqn]`` gets the parameter's layout (a global
parameter: its placement and sbp, so this rank reads only its shard); any other tensor (a
scalar ``step``) is a plain tensor of the saved shape and dtype; a non-tensor value a
placeholder. Then :func:`~.load` fills the targets (a collective, every rank) and the nested
dict ``{optimizer_key: {"state": ..., "param_groups": ...}}`` is returned, as torch's.
"""

from __future__ import annotations

import numpy as np

from ...autograd import _wrap
from .filesystem import FileSystemReader, dtype_of
from .loader import load
from .metadata import put_nested
from .planner import load_options
from .regions import spec_of

__all__ = ["load_sharded_optimizer_state_dict"]


def _target(path, entry, model_state_dict, optimizer_key):
    shape, dtype = tuple(entry["shape"]), dtype_of(entry["dtype"])
    param = (model_state_dict.get(path[2]) if len(path) >= 4 and path[1] == "state"
             else None)
    spec = spec_of(param)
    if spec is not None and tuple(spec.shape) == shape:
        t = _wrap(np.zeros(param.array.shape, dtype=dtype))  # this rank's shard
        t._spec = spec
        return t
    return _wrap(np.zeros(shape, dtype=dtype))


def load_sharded_optimizer_state_dict(model_state_dict, optimizer_key: str, storage_reader,
                                      planner=None) -> dict:
    """The optimizer state under ``optimizer_key`` of the checkpoint ``storage_reader`` reads,
    sharded like ``model_state_dict``'s parameters (module docstring); a collective."""
    load_options(planner)
    if not isinstance(storage_reader, FileSystemReader):
        raise TypeError(f"load_sharded_optimizer_state_dict reads a FileSystemReader "
                        f"checkpoint, got {type(storage_reader).__name__}")
    index = storage_reader.read_index()
    out: dict = {}

    for e in index["tensors"].values():
        if e["path"][0] == optimizer_key:
            put_nested(out, e["path"], _target(e["path"], e, model_state_dict, optimizer_key))
    for e in index["objects"].values():
        if e["path"][0] == optimizer_key:
            put_nested(out, e["path"], None)  # replaced by the saved value
    if optimizer_key not in out:
        raise KeyError(f"the checkpoint {storage_reader.path} has nothing under "
                       f"{optimizer_key!r} (its top-level keys: "
                       f"{sorted({e['path'][0] for e in index['tensors'].values()})})")
    load(out, storage_reader=storage_reader, planner=planner, _note=False)
    return out
