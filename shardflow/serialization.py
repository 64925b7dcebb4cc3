"""``torch.serialization``: ``save`` / ``load`` with PyTorch's signatures, and the safe-globals
registry for reading PyTorch files.

``save(obj, f)`` writes shardflow's checkpoint format, a safetensors file (``checkpoint/io.py``),
whatever the file name's suffix; nothing is pickled. ``save(model)`` of a whole ``Module`` is
refused: pickling a model stores its class by name and runs code at load time, so the
portable form is ``save(model.state_dict(), f)`` and, to restore, building the model from
its class and calling ``load_state_dict(load(f))``.

``load(f)`` reads the file's first bytes: a zip archive is a PyTorch ``torch.save`` file,
read by the restricted unpickler in ``checkpoint/pytorch_file.py`` (tensors and plain
containers only, never arbitrary code; ``weights_only=False`` cannot widen that); anything
else is a safetensors checkpoint (``checkpoint/io.py``, which also refuses raw pickles).
PyTorch's pre-1.6 non-zip format is a raw pickle stream and is refused with how to convert it.
"""

from __future__ import annotations

import os
import pickle

from .backend import device as _device
from .checkpoint import io as _io
from .checkpoint.pytorch_file import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    is_pytorch_zip,
    load_pytorch_file,
    safe_globals,
)
from .checkpoint.safetensors import CheckpointError
from .nn import Module

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "CheckpointError"]

def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, metadata: dict[str, str] | None = None) -> None:
    """Save a state dict (or any nesting of dicts/lists/tuples of tensors, numbers, strings)
    to path or binary file ``f`` as safetensors. The pickle arguments are accepted for
    PyTorch compatibility and unused (nothing is pickled)."""
    if isinstance(obj, Module):
        raise TypeError(
            f"shardflow.save does not save whole modules ({type(obj).__name__}): that needs pickle, "
            "which stores the class by name and runs code when loaded. Save the weights with "
            "shardflow.save(model.state_dict(), path); to restore, build the model from its class "
            "and call model.load_state_dict(shardflow.load(path))."
        )
    _io.save(obj, f, metadata=metadata)


def _read_head(f) -> tuple[bytes, str]:
    if hasattr(f, "read"):
        label = getattr(f, "name", "<file object>")
        pos = f.tell() if hasattr(f, "tell") else None
        head = f.read(8)
        if pos is not None:
            f.seek(pos)
        return head, str(label)
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return fh.read(8), path


def _resolve_cpu_map(map_location):
    """What ``checkpoint.io.load`` accepts (None or a device) for a safetensors file, whose
    tensors are all on the CPU: a dict maps the location 'cpu'; a callable (written for
    PyTorch storages) is not called and the tensors stay on the CPU."""
    if isinstance(map_location, dict):
        return map_location.get("cpu")
    if callable(map_location) and not isinstance(map_location, str | _device):
        return None
    return map_location


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load a shardflow checkpoint or a PyTorch ``torch.save`` zip file (module docstring).

    ``map_location``: as ``torch.load`` (device, string, dict or callable). ``weights_only``
    and ``mmap`` are accepted; loading is always restricted to data."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(
            f"shardflow.load does not take a pickle_module (got {getattr(pickle_module, '__name__', pickle_module)}); "
            "PyTorch files are read with shardflow's restricted unpickler"
        )
    head, label = _read_head(f)
    if is_pytorch_zip(head):
        if hasattr(f, "read"):
            data = f.read()
        else:
            with open(os.fspath(f), "rb") as fh:
                data = fh.read()
        return load_pytorch_file(data, label, map_location)
    if len(head) >= 2 and head[0] == 0x80 and 1 <= head[1] <= 5:
        raise CheckpointError(
            f"{label} is a Python pickle stream, not a zip archive (PyTorch's legacy pre-1.6 torch.save "
            "format, or pickle.dump). shardflow never unpickles raw streams. Re-save it in PyTorch with "
            "torch.save(torch.load(path, weights_only=True), 'new.pt') (zip format) and load that."
        )
    return _io.load(f, _resolve_cpu_map(map_location))
