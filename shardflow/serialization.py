"""``torch.serialization``: ``save`` / ``load`` with PyTorch's signatures, and the safe-globals
registry for reading pickled files.

``save(obj, f)`` writes shardflow's checkpoint format, a safetensors file
(``checkpoint/io.py``), whatever the file name's suffix, for everything a checkpoint is
usually made of (dicts, lists, tuples of tensors, arrays, numbers, strings, dtypes): no
pickle, and PyTorch reads a flat state dict of it with ``safetensors.torch.load_file``.
What safetensors cannot hold — a whole ``Module`` (``torch.save(model, f)``), a checkpoint
dict with an ``argparse.Namespace`` in it — is written as PyTorch does, a pickle in
``torch.save``'s zip format (``checkpoint/pytorch_writer.py``).

``load(f)`` reads the file's first bytes: a zip archive is a ``torch.save`` file (from
PyTorch or from ``save`` above), read by ``checkpoint/pytorch_file.py``; anything else is a
safetensors checkpoint (``checkpoint/io.py``, which also refuses raw pickles). A pickle can
run code when loaded, so, as in PyTorch >= 2.6, ``weights_only=True`` is the default: only
tensors, plain containers and globals the program allowed with ``add_safe_globals`` /
``safe_globals`` load. ``weights_only=False`` is the caller's statement that the file is
trusted: then whole modules load (a PyTorch ``torch.save(model)`` file becomes the
equivalent shardflow modules, the program's own classes are imported as pickle does).
PyTorch's pre-1.6 non-zip format is a raw pickle stream and is refused with how to convert it.
"""

from __future__ import annotations

import os
import pickle

from .backend import device as _device
from .checkpoint import io as _io
from .checkpoint.io import NotPlainDataError
from .checkpoint.pytorch_file import (
    NotAPickleError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    is_pytorch_zip,
    load_pytorch_file,
    safe_globals,
)
from .checkpoint.pytorch_writer import save_pytorch_file
from .checkpoint.safetensors import CheckpointError, is_raw_pickle

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "CheckpointError"]

def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, metadata: dict[str, str] | None = None) -> None:
    """Save ``obj`` to path or binary file ``f``: a state dict (or any nesting of
    dicts/lists/tuples of tensors, numbers, strings) as safetensors; anything else (a whole
    module, an object of the program's own class) as a pickle in ``torch.save``'s format,
    which ``load`` reads back with ``weights_only=False`` (module docstring).

    ``pickle_protocol``: the pickle protocol of a pickled file's ``data.pkl`` (2 by default,
    as torch's); a state dict saved as safetensors has no pickle in it, so there it only has
    to be valid. ``pickle_module``: only the standard ``pickle`` (or None): the file is written
    by shardflow's own pickler (it stores tensors as PyTorch storages); another module (dill,
    cloudpickle) raises ValueError before anything is written. A path whose folder does not
    exist, or that is a folder, raises torch's RuntimeError before anything is written (no
    folder is created)."""
    protocol = _pickle_protocol(pickle_protocol)
    _check_target_path(f)
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(
            f"shardflow.save does not take a pickle_module (got {getattr(pickle_module, '__name__', pickle_module)}); "
            "files are written by shardflow's own pickler in torch.save's format: drop pickle_module= "
            "(objects the standard pickle cannot handle, like lambdas, cannot be saved)"
        )
    try:
        _io.save(obj, f, metadata=metadata)
    except NotPlainDataError as not_plain:  # raised before anything was written
        if metadata:
            raise TypeError(
                "metadata= is stored in safetensors checkpoints only, and this object needs pickle "
                f"({type(obj).__name__}); save its state_dict() to keep metadata"
            ) from None
        try:
            save_pytorch_file(obj, f, protocol)  # pickles everything before writing
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            # pickle's own exception type, as torch.save raises it (PicklingError for a lambda,
            # AttributeError for a local class), with what shardflow tried first
            raise type(e)(f"{not_plain}; pickling it as torch.save does failed too ({type(e).__name__}: {e})") from None


def _check_target_path(f) -> None:
    """torch.save's RuntimeError for a path whose folder does not exist (session 37: the
    folders were created silently) or that is a folder (it was an IsADirectoryError naming
    the temp file), before anything is written; the fix follows torch's words."""
    if not isinstance(f, str | os.PathLike):
        return
    path = os.fsdecode(os.fspath(f))
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist. (save(obj, {path!r}): "
                           "save does not create folders; make it first with "
                           f"os.makedirs({parent!r}, exist_ok=True))")
    if os.path.isdir(path):
        raise RuntimeError(f"open file failed with strerror: Is a directory (save(obj, {path!r}): "
                           f"{path} is a folder; pass a file path inside it, e.g. "
                           f"{os.path.join(path, 'model.pt')!r})")


def _pickle_protocol(protocol) -> int:
    """torch.save's ``pickle_protocol`` checked (None: torch's default, 2)."""
    if protocol is None:
        return 2
    if isinstance(protocol, bool) or not isinstance(protocol, int) or not 2 <= protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"pickle_protocol must be an int from 2 to {pickle.HIGHEST_PROTOCOL} "
                         f"(torch.save's default is 2; torch writes 0 and 1 too, but its own weights-only load cannot read them back), got {protocol!r}")
    return protocol


def _read_head(f) -> tuple[bytes, str]:
    if hasattr(f, "read"):
        label = getattr(f, "name", "<file object>")
        pos = f.tell() if hasattr(f, "tell") else None
        head = f.read(9)
        if pos is not None:
            f.seek(pos)
        return head, str(label)
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return fh.read(9), path


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
    """Load a shardflow checkpoint or a ``torch.save`` zip file (module docstring).

    ``map_location``: as ``torch.load`` (device, string, dict or callable).
    ``weights_only``: None or True (the default, as PyTorch >= 2.6) loads only data and
    allowed globals from a pickled file; False trusts the file. ``mmap`` is accepted.
    ``pickle_load_args``: torch passes them to ``pickle.load``; of those, ``encoding`` and
    ``errors`` only decode Python 2 strings, which the files shardflow reads (zip format, made
    by Python 3) never hold, so they are accepted; any other raises TypeError (before, they
    were dropped)."""
    unknown = set(pickle_load_args) - {"encoding", "errors"}
    if unknown:
        raise TypeError(f"load() got an unexpected keyword argument '{sorted(unknown)[0]}' (torch passes "
                        "it to pickle.load; shardflow's unpickler takes only encoding= and errors=)")
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(
            f"shardflow.load does not take a pickle_module (got {getattr(pickle_module, '__name__', pickle_module)}); "
            "PyTorch files are read with shardflow's own unpickler"
        )
    if weights_only not in (None, True, False):
        raise TypeError(f"weights_only must be None, True or False, got {weights_only!r}")
    head, label = _read_head(f)
    if is_pytorch_zip(head):
        if hasattr(f, "read"):
            data = f.read()
        else:
            with open(os.fspath(f), "rb") as fh:
                data = fh.read()
        return load_pytorch_file(data, label, map_location, weights_only=weights_only is not False)
    if head[:6] == b"\x93NUMPY":  # torch: UnpicklingError ("unpickling stack underflow")
        raise NotAPickleError(
            f"{label} is a NumPy .npy file (numpy.save), not a torch.save file: read it with NumPy, "
            "torch.from_numpy(numpy.load(path)), or save tensors with torch.save(t, path)")
    if is_raw_pickle(head):
        raise NotAPickleError(
            f"{label} is a Python pickle stream, not a zip archive (PyTorch's legacy pre-1.6 torch.save "
            "format, or pickle.dump). shardflow never unpickles raw streams. Re-save it in PyTorch with "
            "torch.save(torch.load(path, weights_only=True), 'new.pt') (zip format) and load that."
        )
    return _io.load(f, _resolve_cpu_map(map_location))
