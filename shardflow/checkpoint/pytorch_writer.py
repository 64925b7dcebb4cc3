"""Writing PyTorch's ``torch.save`` format: a pickle in a zip archive, for what a safetensors
checkpoint cannot hold (a whole ``Module``, a checkpoint dict holding an
``argparse.Namespace`` ...).

The archive is the one ``torch.save`` writes (``pytorch_file.py`` reads it):
``archive/data.pkl`` (pickle protocol 2, PyTorch's default), ``archive/data/<key>`` with
the raw little-endian bytes of each storage, ``archive/byteorder`` and ``archive/version``.
Tensors are pickled under PyTorch's names, so the pickle holds no shardflow tensor class:

* a Tensor is ``torch._utils._rebuild_tensor_v2(storage, 0, size, stride, requires_grad,
  OrderedDict())`` whose storage is a persistent id ``('storage', torch.FloatStorage, key,
  location, numel)``; each tensor gets its own contiguous storage (a view is saved as a
  copy), and one tensor object referenced twice (a tied weight) is pickled once;
* a Parameter is ``torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())``;
* a sparse COO tensor is ``torch._utils._rebuild_sparse_tensor(layout, (indices, values,
  size, is_coalesced))``, the layout ``torch.serialization._get_layout('torch.sparse_coo')``
  (CSR/CSC: ``(compressed_indices, plain_indices, values, size)`` with their layout);
* dtypes are the globals ``torch.float32`` ..., devices ``torch.device('cuda', 0)``,
  ``Size`` is ``torch.Size``.

Everything else (module classes, the program's own classes) is pickled by its module path,
as ``pickle`` does. Reading such a file back runs code from it, so ``load`` needs
``weights_only=False`` or the classes given to ``add_safe_globals`` (``pytorch_file.py``).
A tensor keeps its ``requires_grad`` (a non-leaf one is written as its value with the flag, as
torch.save writes it: it loads as a leaf that requires grad).
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import ml_dtypes
import numpy as np

from ..autograd import Size, Tensor
from ..autograd.tensor import _wrap
from ..backend import device as _device
from ..backend import dtypes
from ..nn.parameter import Parameter
from ..ops.sparse_compressed import SparseCompressedTensor
from ..ops.sparse_coo import SparseTensor
from .atomic import atomic_write

__all__ = ["save_pytorch_file"]

_STORAGE_NAMES = {
    np.dtype(np.float32): "FloatStorage", np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.float16): "HalfStorage", np.dtype(ml_dtypes.bfloat16): "BFloat16Storage",
    np.dtype(np.int64): "LongStorage", np.dtype(np.int32): "IntStorage",
    np.dtype(np.int16): "ShortStorage", np.dtype(np.int8): "CharStorage",
    np.dtype(np.uint8): "ByteStorage", np.dtype(np.bool_): "BoolStorage",
    np.dtype(np.complex64): "ComplexFloatStorage", np.dtype(np.complex128): "ComplexDoubleStorage",
}


class _Global:
    """A PyTorch global written by name (PyTorch need not be importable)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce insists on a callable
        raise TypeError(f"{self.module}.{self.name} is a name written into a pickle, not a function")


_GLOBALS: dict[tuple[str, str], _Global] = {}


def _global(module: str, name: str) -> _Global:
    g = _GLOBALS.get((module, name))
    if g is None:
        g = _GLOBALS[(module, name)] = _Global(module, name)
    return g


class _StorageOut:
    """The bytes of one tensor's storage, written as a persistent id and a record."""

    __slots__ = ("array", "location")

    def __init__(self, array: np.ndarray, location: str):
        self.array, self.location = array, location


class _LayoutOut:
    """A sparse layout, pickled as torch's ``torch.serialization._get_layout(name)``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _TensorOut:
    """A plain tensor's data (a Parameter's ``data`` argument)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor):
        self.tensor = tensor


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


class _Pickler(pickle._Pickler):
    """The pure-Python pickler (its dispatch table can be extended to write PyTorch's
    globals by name) with tensors as storages in the archive."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int = 2):
        super().__init__(file, protocol=protocol)
        self.records: list[tuple[str, bytes]] = []

    def save_global(self, obj, name=None) -> None:
        # torch.save uses the C pickler, which refuses a local class or function with
        # AttributeError; the pure-Python one would say PicklingError (a program's
        # ``except AttributeError`` should catch the same error on both)
        qualname = name or getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
        if "<locals>" in qualname.split("."):
            raise AttributeError(f"Can't pickle local object {qualname!r}")
        super().save_global(obj, name)

    dispatch[type] = save_global
    dispatch[type(lambda: None)] = save_global  # plain functions

    def save_torch_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch[_Global] = save_torch_global

    def save_dtype(self, obj) -> None:
        self.save(_global("torch", obj.name))

    dispatch[dtypes.dtype] = save_dtype

    def persistent_id(self, obj):
        if type(obj) is not _StorageOut:
            return None
        a = obj.array
        key = str(len(self.records))
        self.records.append((key, a.tobytes()))
        if a.dtype not in _STORAGE_NAMES:  # uint16/32/64, float8: bytes (torch's _rebuild_tensor_v3)
            return ("storage", _global("torch.storage", "UntypedStorage"), key, obj.location, int(a.nbytes))
        return ("storage", _global("torch", _STORAGE_NAMES[a.dtype]), key, obj.location, int(a.size))

    def _tensor_reduce(self, t: Tensor, requires_grad: bool):
        # np.require, not np.ascontiguousarray: that one makes a 0-d array 1-d, and a 0-d
        # tensor (Adam's step) came back from torch.load with shape [1]
        a = np.require(t.detach().cpu().numpy(), requirements="C")
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        storage = _StorageOut(a.reshape(-1), str(t.device))
        args = (storage, 0, tuple(a.shape), _contiguous_strides(a.shape), requires_grad, OrderedDict())
        if a.dtype not in _STORAGE_NAMES:
            return _global("torch._utils", "_rebuild_tensor_v3"), (*args, t.dtype)
        return _global("torch._utils", "_rebuild_tensor_v2"), args

    def reducer_override(self, obj):
        if isinstance(obj, SparseCompressedTensor):  # CSR/CSC: (compressed, plain, values, size)
            data = (_wrap(np.asarray(obj._compressed)), _wrap(np.asarray(obj._plain)), obj._vals.detach(),
                    Size(obj._size))
            return _global("torch._utils", "_rebuild_sparse_tensor"), (_LayoutOut(f"torch.{obj._layout.name}"), data)
        if isinstance(obj, SparseTensor):  # torch's _rebuild_sparse_tensor(layout, data)
            data = (_wrap(np.asarray(obj._idx, np.int64)), obj._vals.detach(), Size(obj._size), obj._coalesced)
            return _global("torch._utils", "_rebuild_sparse_tensor"), (_LayoutOut("torch.sparse_coo"), data)
        if type(obj) is _LayoutOut:
            return _global("torch.serialization", "_get_layout"), (obj.name,)
        if isinstance(obj, Tensor):
            # a non-leaf that requires grad is written as torch.save writes it: its value with
            # the flag, so that it loads as a leaf requiring grad
            if isinstance(obj, Parameter):
                return (_global("torch._utils", "_rebuild_parameter"),
                        (_TensorOut(obj), obj.requires_grad, OrderedDict()))
            return self._tensor_reduce(obj, obj.requires_grad)
        if type(obj) is _TensorOut:
            return self._tensor_reduce(obj.tensor, False)
        if isinstance(obj, _device):
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return _global("torch", "device"), args
        if isinstance(obj, Size):
            return _global("torch", "Size"), (tuple(int(n) for n in obj),)
        return NotImplemented


def _archive(obj, protocol: int = 2) -> bytes:
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/byteorder", "little")
        for key, raw in pickler.records:
            z.writestr(f"archive/data/{key}", raw)
        z.writestr("archive/version", "3\n")
    return out.getvalue()


def save_pytorch_file(obj, f, protocol: int = 2) -> None:
    """Write ``obj`` in ``torch.save``'s format to path ``f`` (atomically) or a binary file;
    ``protocol``: of ``data.pkl`` (torch.save's ``pickle_protocol``, 2 by default as torch's)."""
    data = _archive(obj, protocol)  # pickle everything before touching the target
    if hasattr(f, "write"):
        f.write(data)
    else:
        atomic_write(os.fspath(f), lambda fh: fh.write(data))
