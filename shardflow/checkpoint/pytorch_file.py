"""Reading PyTorch ``.pt`` files (``torch.save``'s zip format).

A ``torch.save`` file is a zip archive: ``<root>/data.pkl`` is a pickle of the saved object,
``<root>/data/<key>`` holds the raw bytes of each storage, ``<root>/byteorder`` says
``little`` or ``big``. Unpickling imports and calls whatever the pickle names, so a ``.pt``
file from a stranger can run any code. As in PyTorch >= 2.6, ``weights_only=True`` is the
default, and then this reader unpickles with an allow-list (``_Unpickler.find_class``):
every global the pickle names must be one of

* PyTorch's tensor rebuild functions (``torch._utils._rebuild_tensor_v2``,
  ``_rebuild_tensor``, ``_rebuild_parameter``, ``_rebuild_parameter_with_state``), the
  typed storage classes (``torch.FloatStorage`` ...), dtypes (``torch.float32``),
  ``torch.device`` and ``torch.Size`` — each mapped to a shardflow function here that
  builds shardflow objects, never to PyTorch itself (PyTorch need not be installed);
* ``collections.OrderedDict``, ``set``, ``frozenset`` and ``_codecs.encode`` (how protocol
  2 stores bytes);
* or a global the user allowed with ``add_safe_globals`` / ``safe_globals`` (as
  ``torch.serialization``). A PyTorch name in the file is allowed when the shardflow object
  it maps to is (``torch_names.py``): ``add_safe_globals([nn.Linear])`` allows the file's
  ``torch.nn.modules.linear.Linear``, as PyTorch allows it for ``torch.nn.Linear``.

Anything else (a model class from ``torch.save(model)``, ``os.system`` in a malicious
file) raises ``WeightsOnlyUnpicklingError`` naming the global and the two fixes, before it
is imported or called. Plain containers, numbers, strings, bools and None need no globals.
That error is both a ``CheckpointError`` and, as PyTorch raises there, a
``pickle.UnpicklingError``: programs written for PyTorch >= 2.6 catch the latter to retry
with ``weights_only=False`` (``except pickle.UnpicklingError:``), and so reach their retry
here too. (A truncated or malformed pickle raises ``CheckpointError`` only; PyTorch raises
the underlying ``EOFError`` or the like there.)

``weights_only=False`` is PyTorch's explicit opt-in to trust the file: every global is
resolved — PyTorch's names to their shardflow counterparts (``torch_names.py``; a
PyTorch name shardflow lacks is named in the error), any other name imported as
``pickle`` would (the program's own model class) — so a whole module saved with
``torch.save(model)`` loads as a shardflow module (``torch_names.restore_module``).

Storage references (persistent ids ``('storage', type, key, location, numel)``) are read
from the archive and checked: the record must exist and hold exactly ``numel`` elements,
and every tensor's offset, sizes and strides must stay inside its storage. A tensor loaded
on the CPU is a view of its storage's array, so tensors that shared a storage in the file
(views) share it again, as in torch (same ``untyped_storage()``, writes seen by both); on a
GPU each is copied there alone. One tensor object referenced twice (tied weights) stays one
object.

``map_location`` follows ``torch.load``: None keeps each storage's saved location (a CUDA
location without CUDA raises PyTorch's error and its fix); a device or string sends every
tensor there; a dict renames locations; a callable ``f(storage, location)`` may return the
storage (CPU), ``storage.cuda(i)``, or None (the default rule).
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import io
import pickle
import zipfile
import zlib

import ml_dtypes
import numpy as np

from ..autograd import Size
from ..autograd.tensor import _wrap
from ..backend import as_dtype, cuda_is_available, to_device
from ..backend import device as _device
from ..nn.module import Module
from .safetensors import CheckpointError, CorruptCheckpointError
from .torch_names import is_torch_name, restore_module, shardflow_global

__all__ = ["load_pytorch_file", "is_pytorch_zip", "add_safe_globals", "clear_safe_globals",
           "get_safe_globals", "safe_globals", "WeightsOnlyUnpicklingError", "NotATorchZipError",
           "NotAPickleError"]


class WeightsOnlyUnpicklingError(CheckpointError, pickle.UnpicklingError):
    """``weights_only=True`` refused a pickle (a global off the allow-list, or a BUILD on
    a non-data object). A ``pickle.UnpicklingError``, as PyTorch's
    ``torch.load`` raises there, so ``except pickle.UnpicklingError`` catches it in both."""


class NotATorchZipError(CheckpointError, RuntimeError):
    """A zip archive that is not a ``torch.save`` file (no ``<name>/data.pkl``): a
    ``RuntimeError``, as PyTorch's zip reader raises for it."""


class NotAPickleError(CheckpointError, pickle.UnpicklingError):
    """A file that is neither a ``torch.save`` zip nor a shardflow checkpoint and that
    PyTorch's ``torch.load`` fails to unpickle (a NumPy ``.npy``, a raw pickle stream): a
    ``pickle.UnpicklingError``, as PyTorch raises there."""


_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": ml_dtypes.bfloat16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "UntypedStorage": np.uint8,  # torch.storage.UntypedStorage: bytes, typed by _rebuild_tensor_v3
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
}
_TORCH_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool", "float", "double", "half", "long", "int", "short", "uint16", "uint32",
                 "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                 "complex64", "complex128", "cfloat", "cdouble")

# User-allowed globals: "module.qualname" -> object (see add_safe_globals).
_user_globals: dict[str, object] = {}


def add_safe_globals(safe_globals) -> None:
    """Allow these globals in PyTorch files (``torch.serialization.add_safe_globals``): each
    entry is an object (allowed under its ``__module__.__qualname__``) or ``(object, "name")``.
    Only allow what you trust: the pickle will call it with arguments from the file."""
    for g in safe_globals:
        obj, name = g if isinstance(g, tuple) else (g, f"{g.__module__}.{g.__qualname__}")
        _user_globals[name] = obj


def clear_safe_globals() -> None:
    _user_globals.clear()


def get_safe_globals() -> list:
    return [obj if f"{obj.__module__}.{getattr(obj, '__qualname__', '')}" == name else (obj, name)
            for name, obj in _user_globals.items()]


class safe_globals:
    """``with safe_globals([...]):`` allows the globals inside the block only."""

    def __init__(self, globals_list):
        self.globals_list = globals_list

    def __enter__(self):
        self._saved = dict(_user_globals)
        add_safe_globals(self.globals_list)

    def __exit__(self, *exc):
        _user_globals.clear()
        _user_globals.update(self._saved)
        return False


# ------------------------------------------------------------------ what the pickle may build
class _StorageType:
    """Stands for ``torch.FloatStorage`` etc. inside a persistent id: only its dtype matters."""

    def __init__(self, name: str):
        self.name, self.dtype = name, np.dtype(_STORAGE_DTYPES[name])


class _Storage:
    """One storage of the archive: its elements (1-D array) and where it is to live."""

    def __init__(self, array: np.ndarray, location: str):
        self.array, self.location = array, location

    def cpu(self):
        return _Storage(self.array, "cpu")

    def cuda(self, device=None, non_blocking: bool = False):
        if device is None:
            idx = 0
        elif isinstance(device, int):
            idx = device
        else:
            idx = _device(device).index or 0
        return _Storage(self.array, f"cuda:{idx}")


def _ints(value, what: str) -> tuple:
    if not isinstance(value, tuple | list) or not all(type(v) is int for v in value):
        raise CheckpointError(f"PyTorch file: tensor {what} must be a tuple of ints, got {value!r}")
    return tuple(value)


def _rebuild_tensor(storage, storage_offset, size, stride, *unused):
    """The tensor ``storage[offset]`` with ``size``/``stride`` (in elements), a view of the
    storage on the CPU, after checking that every element it reads lies inside the storage."""
    if not isinstance(storage, _Storage):
        raise CheckpointError(f"PyTorch file: expected a storage for a tensor, got {type(storage).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if type(storage_offset) is not int or len(size) != len(stride):
        raise CheckpointError(f"PyTorch file: bad tensor layout (offset {storage_offset!r}, size {size}, stride {stride})")
    a = storage.array
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or storage_offset < 0:
        raise CheckpointError(f"PyTorch file: negative size/stride/offset ({size}, {stride}, {storage_offset})")
    numel = int(np.prod(size, dtype=np.int64)) if size else 1
    if numel:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= a.size:
            raise CheckpointError(
                f"PyTorch file is corrupt or malicious: a tensor of size {size}, stride {stride}, "
                f"offset {storage_offset} reads element {last} of a storage of {a.size}"
            )
        # np.ndarray over the storage, not as_strided: that rebuilds the dtype from a typestr,
        # which loses ml_dtypes' float8_e5m2 ('<f1')
        out = np.ndarray(size, a.dtype, buffer=a, offset=storage_offset * a.itemsize,
                         strides=tuple(s * a.itemsize for s in stride))
    else:
        out = np.empty(size, a.dtype)
    return _wrap(out if storage.location == "cpu" else to_device(np.ascontiguousarray(out), _device(storage.location)))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, *unused):
    """torch's tensor: :func:`_rebuild_tensor`, then ``requires_grad`` as it was saved (torch
    saves a tensor that requires grad -- a leaf, or a non-leaf, which loads as a leaf -- with
    the flag, and ``load`` gives it back requiring grad)."""
    return _with_requires_grad(_rebuild_tensor(storage, storage_offset, size, stride), requires_grad)


def _with_requires_grad(t, requires_grad):
    if requires_grad is True and (t.is_floating_point() or t.is_complex()):
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, *unused):
    """torch's form for dtypes without a legacy storage class (uint16/32/64, float8): an
    ``UntypedStorage`` of bytes read as ``dtype``."""
    if not isinstance(storage, _Storage) or not isinstance(dtype, type(as_dtype("float32"))):
        raise CheckpointError(f"PyTorch file: _rebuild_tensor_v3 expects a storage and a dtype, got "
                              f"{type(storage).__name__} and {dtype!r}")
    raw = storage.array
    if raw.dtype != np.uint8 and raw.dtype != dtype.np:
        raw = raw.view(np.uint8)
    if raw.dtype == np.uint8 and dtype.np != np.uint8:
        if raw.size % dtype.itemsize:
            raise CheckpointError(f"PyTorch file: a storage of {raw.size} bytes is not a whole number of {dtype}")
        raw = raw.view(dtype.np)
    return _with_requires_grad(_rebuild_tensor(_Storage(raw, storage.location), storage_offset, size, stride),
                               requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks, *state):
    from ..nn import Parameter

    return Parameter(data, requires_grad=bool(requires_grad) and data.is_floating_point())


def _codecs_encode(obj, encoding="utf-8"):
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise CheckpointError(f"PyTorch file: unexpected _codecs.encode({type(obj).__name__}, {encoding!r})")
    return codecs.encode(obj, encoding)


def _size(values=()):
    return Size(_ints(values, "Size"))


def _rebuild_sparse_tensor(layout, data):
    """torch's ``_utils._rebuild_sparse_tensor``: a COO tensor from (indices, values, size[,
    is_coalesced]), a CSR/CSC one from (compressed_indices, plain_indices, values, size); the
    blocked layouts (BSR/BSC) are not built in shardflow."""
    from ..backend.layout import sparse_csc, sparse_csr
    from ..ops.sparse_compressed import sparse_compressed_tensor
    from ..ops.sparse_coo import sparse_coo_tensor

    if layout in ("sparse_csr", "sparse_csc"):
        compressed, plain, values, size = data
        return sparse_compressed_tensor(compressed, plain, values, tuple(size),
                                        layout=sparse_csr if layout == "sparse_csr" else sparse_csc)
    if layout != "sparse_coo":
        raise CheckpointError(f"PyTorch file: a sparse tensor of layout torch.{layout}; shardflow "
                              "reads sparse_coo, sparse_csr and sparse_csc only (save it with .to_sparse() "
                              "or .to_sparse_csr())")
    indices, values, size = data[:3]
    return sparse_coo_tensor(indices, values, tuple(size), is_coalesced=data[3] if len(data) > 3 else None)


def _get_layout(name):
    if not isinstance(name, str) or not name.startswith("torch."):
        raise CheckpointError(f"PyTorch file: unexpected layout {name!r}")
    return name[len("torch."):]


def _allowed_global(module: str, name: str):
    if (module, name) == ("torch._utils", "_rebuild_sparse_tensor"):
        return _rebuild_sparse_tensor
    if (module, name) == ("torch.serialization", "_get_layout"):
        return _get_layout
    if module == "torch._utils":
        if name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if name == "_rebuild_tensor":
            return _rebuild_tensor
        if name == "_rebuild_tensor_v3":
            return _rebuild_tensor_v3
        if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
    if (module, name) == ("torch.storage", "UntypedStorage"):
        return _StorageType(name)
    if module == "torch":
        if name in _STORAGE_DTYPES:
            return _StorageType(name)
        if name in _TORCH_DTYPES:
            return as_dtype(name)
        if name == "device":
            return _device
        if name == "Size":
            return _size
    if (module, name) == ("collections", "OrderedDict"):
        return collections.OrderedDict
    if module == "builtins" and name in ("set", "frozenset"):
        return {"set": set, "frozenset": frozenset}[name]
    if (module, name) == ("_codecs", "encode"):
        return _codecs_encode
    return None


def _user_allowed(module: str, name: str):
    """A global the user allowed: by its name, or a PyTorch name whose shardflow object is
    allowed (``torch.nn.modules.linear.Linear`` when ``nn.Linear`` is)."""
    obj = _user_globals.get(f"{module}.{name}")
    if obj is None and is_torch_name(module):
        mapped = shardflow_global(module, name)
        if mapped is not None and any(mapped is o for o in _user_globals.values()):
            obj = mapped
    return obj


def _suggestion(module: str, name: str) -> str:
    """How the user names ``module.name`` in add_safe_globals."""
    if is_torch_name(module):
        mapped = shardflow_global(module, name)
        if mapped is not None:
            where = "nn.functional" if module in ("torch.nn.functional", "torch._C._nn") else (
                "nn" if isinstance(mapped, type) else "")
            return f"shardflow.{where + '.' if where else ''}{name}"
    return f"{module}.{name}"


class _Unpickler(pickle._Unpickler):
    """The pure-Python unpickler (its opcode table can be extended; the pickle of a state
    dict is small, the tensor bytes are separate records) with PyTorch's globals mapped to
    shardflow, storage ids read from the archive, and — with ``weights_only`` — restricted
    globals and BUILD (module docstring)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, read_record, label: str, map_location, byteorder: str,
                 weights_only: bool = True):
        super().__init__(io.BytesIO(data))
        self._read_record, self._label, self._map = read_record, label, map_location
        self._byteorder, self._weights_only = byteorder, weights_only
        self._storages: dict[str, _Storage] = {}

    def load_build(self):
        # BUILD sets attributes on the object below it. With weights_only it is allowed only
        # on data objects: an OrderedDict (a state dict's ``_metadata``) or an instance of a
        # user-allowed class; never on a class or function (that would patch shardflow or the
        # standard library). A shardflow Module gets PyTorch's or shardflow's module state.
        inst = self.stack[-2]
        if self._weights_only:
            allowed = {id(o) for o in _user_globals.values()}
            if not (type(inst) is collections.OrderedDict or id(type(inst)) in allowed):
                raise WeightsOnlyUnpicklingError(
                    f"{self._label}: the pickle sets the state of a {type(inst).__name__}, which "
                    "weights_only=True does not allow (only OrderedDicts and objects of classes given "
                    "to add_safe_globals)"
                )
        if isinstance(inst, Module):
            restore_module(inst, self.stack.pop())
            return
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def find_class(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 spells builtins as __builtin__
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        obj = _allowed_global(module, name)
        if obj is None:
            obj = _user_allowed(module, name)
        if obj is not None:
            return obj
        what = f"{module}.{name}"
        if not self._weights_only:  # the caller trusts the file: resolve like pickle
            if not is_torch_name(module):
                return super().find_class(module, name)
            obj = shardflow_global(module, name)
            if obj is None:
                raise CheckpointError(
                    f"{self._label} names PyTorch's {what!r}, which has no shardflow counterpart; "
                    "save the object's state (e.g. its state_dict()) in PyTorch instead of the object"
                )
            return obj
        hint = " (a whole model saved with torch.save(model))" if name[:1].isupper() else ""
        raise WeightsOnlyUnpicklingError(
            f"{self._label} names the global {what!r}{hint}, which weights_only=True (the default, as "
            "in PyTorch >= 2.6) does not load: unpickling it runs code from the file. If you trust "
            "the file, load it with shardflow.load(path, weights_only=False); or allow what it "
            f"needs: shardflow.serialization.add_safe_globals([{_suggestion(module, name)}, ...]) "
            "(or `with shardflow.serialization.safe_globals([...]):`), as in PyTorch."
        )

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)
                and isinstance(pid[3], str) and type(pid[4]) is int):
            raise CheckpointError(f"{self._label}: unsupported persistent id {pid!r} (expected a tensor storage)")
        _, stype, key, location, numel = pid
        if key not in self._storages:
            raw = self._read_record(key)
            if len(raw) != numel * stype.dtype.itemsize:
                raise CheckpointError(
                    f"{self._label} is corrupt: storage {key} holds {len(raw)} bytes, expected "
                    f"{numel} x {stype.dtype.itemsize} ({stype.name})"
                )
            arr = np.frombuffer(raw, dtype=stype.dtype)
            arr = arr.byteswap() if self._byteorder == "big" and arr.itemsize > 1 else arr.copy()
            self._storages[key] = self._place(_Storage(arr, location), location)
        return self._storages[key]

    def _place(self, storage: _Storage, location: str) -> _Storage:
        m = self._map
        if callable(m) and not isinstance(m, _device | str):
            result = m(storage.cpu(), location)
            if result is not None:
                if not isinstance(result, _Storage):
                    raise CheckpointError(
                        f"map_location returned {type(result).__name__}; return the storage, "
                        "storage.cuda(i) or None"
                    )
                return result
            m = None
        if isinstance(m, dict):
            location = str(m.get(location, location))
        elif m is not None:
            location = str(_device(m))
        if location.startswith("cuda") and not cuda_is_available():
            raise RuntimeError(
                f"{self._label}: Attempting to deserialize object on a CUDA device but "
                "shardflow.cuda.is_available() is False. If you are running on a CPU-only machine, "
                "please use shardflow.load with map_location=shardflow.device('cpu') to map your "
                "storages to the CPU."
            )
        if not (location == "cpu" or location.startswith("cuda")):
            raise CheckpointError(
                f"{self._label}: storage location {location!r} is not a shardflow device; "
                "pass map_location='cpu'"
            )
        return _Storage(storage.array, location)


def is_pytorch_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def load_pytorch_file(data: bytes, label: str, map_location=None, weights_only: bool = True):
    """Load a ``torch.save`` zip archive given as ``data`` (see the module docstring)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
    except zipfile.BadZipFile as e:  # torch: RuntimeError "PytorchStreamReader failed ..."
        raise CorruptCheckpointError(
            f"{label} is not a readable zip archive ({e}): the checkpoint file is truncated or "
            "corrupted (an interrupted write or copy?); use an earlier checkpoint") from None

    def read_member(name: str) -> bytes:
        try:
            return zf.read(name)
        except (zipfile.BadZipFile, zlib.error, EOFError) as e:  # e.g. "Bad CRC-32"
            raise CorruptCheckpointError(
                f"{label} is corrupted: its record {name!r} cannot be read ({e}); the file "
                "changed after it was written. Use an earlier checkpoint") from None

    pkls = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkls:
        if any(n.endswith("constants.pkl") or "/code/" in n for n in names):
            raise CheckpointError(
                f"{label} is a TorchScript archive (torch.jit.save); shardflow cannot run TorchScript. "
                "In PyTorch: torch.save(torch.jit.load(path).state_dict(), 'weights.pt') and load that."
            )
        if names and all(n.endswith(".npy") for n in names):
            raise NotATorchZipError(
                f"{label} is a NumPy .npz archive (numpy.savez), not a torch.save file: read it with "
                "NumPy, {k: torch.from_numpy(v) for k, v in numpy.load(path).items()}")
        raise NotATorchZipError(f"{label} is a zip archive without data.pkl: not a torch.save file")
    root = pkls[0][: -len("data.pkl")]
    byteorder = "little"
    if root + "byteorder" in names:
        byteorder = read_member(root + "byteorder").decode(errors="replace").strip()
        if byteorder not in ("little", "big"):
            raise CheckpointError(f"{label}: unknown byteorder {byteorder!r}")

    def read_record(key: str) -> bytes:
        name = f"{root}data/{key}"
        if "/" in key or name not in names:
            raise CheckpointError(f"{label} is corrupt: storage record {key!r} is missing")
        return read_member(name)

    unpickler = _Unpickler(read_member(pkls[0]), read_record, label, map_location, byteorder, weights_only)
    try:
        return unpickler.load()
    except (CheckpointError, RuntimeError):
        raise
    except (ImportError, AttributeError) as e:
        if weights_only:
            raise CheckpointError(f"{label}: cannot read its pickle ({type(e).__name__}: {e})") from None
        raise type(e)(
            f"{label} names a class or function that cannot be found ({e}); a pickled object is "
            "loaded by its class's module path, so import or define it where the saving program did"
        ) from e
    except Exception as e:  # truncated or malformed pickle
        raise CheckpointError(f"{label}: cannot read its pickle ({type(e).__name__}: {e})") from None
