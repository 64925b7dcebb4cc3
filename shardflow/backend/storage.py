"""Storages: ``torch.UntypedStorage``, ``torch.TypedStorage`` and the legacy ``FloatStorage``
family, over the NumPy (or CuPy) memory behind shardflow's arrays.

A tensor's *storage* is the memory of its root array: the last array on its ``.base`` chain
(through NumPy's ``as_strided`` holders, whose ``.base`` is the array they view). Every view
of one array (slices, transposes, reshapes, ``set_`` on its storage) has the same root, so
``untyped_storage()`` of any of them is the same ``UntypedStorage`` object (cached by the
root's identity, as torch keeps one Python object per storage): same ``data_ptr()``,
``nbytes()``, ``size()``; ``storage_offset()`` is the tensor's first element's distance from
the storage's first byte. An ``UntypedStorage`` holds ``_bytes``, a 1-D ``uint8`` array over
the root's whole byte span (built from the span's address with an ``__array_interface__``
holder that keeps the root alive), so writes through a storage are writes to the tensors.

A ``TypedStorage`` is an ``UntypedStorage`` read as one dtype (``_untyped_storage`` and
``dtype``, torch's fields); ``FloatStorage(...)`` and its siblings make ``TypedStorage``
objects of their dtype, and ``isinstance(s, FloatStorage)`` checks the dtype (torch's
``_LegacyStorageMeta``). ``Tensor.storage()`` and constructing a ``TypedStorage`` warn
torch's deprecation text once per process (``_set_always_warn_typed_storage_removal(True)``
warns every time).

What NumPy cannot do: an array's memory never moves or grows, so ``resize_`` to another size
and ``share_memory_()`` of a storage not already in shared memory raise with the fix
(``Tensor.share_memory_()`` moves a tensor; ``_new_shared(n)`` makes a shared storage), and
``set_`` outside the storage raises instead of growing it (torch grows the storage).
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import shared_memory as shm
from .device import CPU
from .device import device as _device
from .dtypes import _SCALAR_TYPE_NAMES, as_dtype, cast, get_default_dtype
from .meta import MetaArray
from .xp import device_of, get_array_module, is_device_array, to_device

__all__ = ["StorageBase", "UntypedStorage", "TypedStorage", "is_storage", "storage_of", "storage_offset_of",
           "root_of", "LEGACY_STORAGES", "legacy_storage_class", "from_file"]

_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
    "storage class. This should only matter to you if you are using storages directly.  To access "
    "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")
_warned = [False]
_always_warn = [False]


def _set_always_warn_typed_storage_removal(always_warn: bool) -> None:
    """torch's switch: warn on every TypedStorage use instead of once per process."""
    _always_warn[0] = bool(always_warn)


def _warn_typed_storage_removal(stacklevel: int = 2) -> None:
    if _always_warn[0] or not _warned[0]:
        warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=stacklevel + 1)
        _warned[0] = True


# ---------------------------------------------------------------------------- arrays' memory
class _Span:
    """An ``__array_interface__`` over ``nbytes`` bytes at ``address``; ``base`` keeps the
    owner alive and lets ``root_of`` walk from the byte view back to it."""

    def __init__(self, address: int, nbytes: int, readonly: bool, base):
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}
        self.base = base


def _is_array(obj) -> bool:
    return isinstance(obj, np.ndarray) or is_device_array(obj)


def root_of(array):
    """The last array on ``array``'s ``.base`` chain: the one that owns the memory."""
    root, b = array, getattr(array, "base", None)
    while b is not None:
        if _is_array(b):
            root = b
        b = getattr(b, "base", None)
    return root


def _address(a) -> int:
    if isinstance(a, MetaArray):
        return 0  # no memory
    return int(a.__array_interface__["data"][0]) if isinstance(a, np.ndarray) else int(a.data.ptr)


def _span(a) -> tuple[int, int]:
    """``(lowest byte address, number of bytes)`` that ``a``'s elements cover."""
    ptr = _address(a)
    if a.size == 0:
        return ptr, 0
    lo = sum((n - 1) * s for n, s in zip(a.shape, a.strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(a.shape, a.strides, strict=True) if s > 0)
    return ptr + lo, hi - lo + a.itemsize


def _bytes_of(root):
    """A 1-D uint8 array over ``root``'s whole byte span (the same memory)."""
    if root.ndim == 1 and root.dtype == np.uint8 and root.strides == (1,):
        return root
    lo, n = _span(root)
    if isinstance(root, np.ndarray):
        if root.size and (root.flags.c_contiguous or root.flags.f_contiguous):
            # plain views keep the .base chain all arrays (shared_memory.is_shared walks it)
            return (root if root.flags.c_contiguous else root.T).reshape(-1).view(np.uint8)
        return np.asarray(_Span(lo, n, not root.flags.writeable, root))
    xp = get_array_module(root)
    return xp.ndarray((n,), xp.uint8, memptr=root.data + (lo - _address(root)))


_by_root: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(root) -> storage


def storage_of(array) -> UntypedStorage:
    """The ``UntypedStorage`` behind ``array`` (one object per root array, module docstring).
    A meta tensor's storage has its byte count, ``data_ptr()`` 0 and no values, as torch's."""
    if isinstance(array, MetaArray):
        return UntypedStorage._over(MetaArray((array.size * array.itemsize,), np.uint8), array)
    if not _is_array(array):
        raise TypeError(f"untyped_storage(): expected a NumPy or CuPy array, got {type(array).__name__}")
    root = root_of(array)
    found = _by_root.get(id(root))
    if found is None or found._root is not root:
        found = UntypedStorage._over(_bytes_of(root), root)
        _by_root[id(root)] = found
    return found


def storage_offset_of(array) -> int:
    """Elements between ``array``'s storage's first byte and ``array``'s first element."""
    if not _is_array(array):
        return 0
    return (_address(array) - _span(root_of(array))[0]) // array.itemsize


# ---------------------------------------------------------------------------- UntypedStorage
class StorageBase:
    """torch's ``torch.StorageBase``: the base class of ``UntypedStorage``."""


class UntypedStorage(StorageBase):
    """Bytes (``torch.UntypedStorage``): ``UntypedStorage(size, device=None)`` (zero-filled),
    ``UntypedStorage(sequence_of_ints)``, or a tensor's ``untyped_storage()``."""

    is_sparse = False
    is_sparse_csr = False
    dtype_ = None

    def __init__(self, *args, device=None):
        if len(args) > 1:
            raise TypeError(f"UntypedStorage() takes at most one positional argument (a size or a "
                            f"sequence of ints), got {len(args)}")
        dev = _device(device) if device is not None else CPU
        arg = args[0] if args else 0
        if isinstance(arg, int | np.integer) and not isinstance(arg, bool):
            if arg < 0:
                raise RuntimeError(f"Storage size must be non-negative, got {arg}")
            data = np.zeros(int(arg), np.uint8)
        elif isinstance(arg, list | tuple):
            data = np.asarray(arg, dtype=np.int64).astype(np.uint8)  # 300 -> 44, as torch
        else:
            raise TypeError(f"UntypedStorage() takes a size or a sequence of ints, got "
                            f"{type(arg).__name__}; a tensor's storage is tensor.untyped_storage()")
        if dev.type != "cpu":
            data = to_device(data, dev)
        self._bytes = data
        self._root = data

    @classmethod
    def _over(cls, byte_array, root) -> UntypedStorage:
        s = object.__new__(cls)
        s._bytes, s._root = byte_array, root
        return s

    @classmethod
    def _new_shared(cls, size: int, *, device=None) -> UntypedStorage:
        """A zero-filled storage of ``size`` bytes in shared memory (CPU)."""
        if device is not None and _device(device).type != "cpu":
            raise RuntimeError("_new_shared: shardflow shares CPU memory only")
        (a,) = shm.share_arrays([np.zeros(int(size), np.uint8)])
        return storage_of(a)

    @staticmethod
    def from_buffer(buffer, byte_order=None, count: int = -1, offset: int = 0, *, dtype=None,
                    device=None) -> UntypedStorage:
        """A copy of ``buffer``'s bytes (``dtype`` and ``byte_order`` as torch: the bytes are
        read as ``dtype`` elements in that byte order, stored in the machine's order)."""
        if dtype is None:
            raise RuntimeError("from_buffer: UntypedStorage.from_buffer needs dtype= (the element "
                               "type the buffer's bytes hold), e.g. dtype=shardflow.uint8")
        return TypedStorage._read_buffer(buffer, byte_order, count, offset, as_dtype(dtype), device)._untyped_storage

    @staticmethod
    def from_file(filename, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """A storage over ``nbytes`` bytes of a file (``shared``: writes go to the file)."""
        return storage_of(_map_file(filename, shared, int(nbytes), np.uint8))

    # -- what it is
    def data_ptr(self) -> int:
        return _address(self._bytes) if self._bytes.size else 0  # torch: 0 for no memory

    def nbytes(self) -> int:
        return int(self._bytes.size)

    def size(self) -> int:
        return int(self._bytes.size)

    def __len__(self) -> int:
        return int(self._bytes.size)

    def element_size(self) -> int:
        return 1

    @property
    def device(self):
        return device_of(self._bytes)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_hpu(self) -> bool:
        return False

    def get_device(self) -> int:
        d = self.device
        return (d.index or 0) if d.type == "cuda" else -1

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            return "torch.UntypedStorage" if self.device.type == "cpu" else "torch.cuda.UntypedStorage"
        raise TypeError("UntypedStorage.type(dtype): an untyped storage has no dtype; read it as one "
                        "with shardflow.TypedStorage(wrap_storage=s, dtype=...)")

    def untyped(self) -> UntypedStorage:
        return self

    def is_shared(self) -> bool:
        return shm.is_shared(self._root)

    def is_pinned(self, device=None) -> bool:
        return False

    # -- values
    def _host(self) -> np.ndarray:
        return self._bytes if isinstance(self._bytes, np.ndarray) else to_device(self._bytes, CPU)

    def tolist(self) -> list[int]:
        return self._host().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def _index(self, i: int) -> int:
        n = self._bytes.size
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return i % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop, step = idx.indices(self._bytes.size)
            if step != 1:
                raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is supported")
            return UntypedStorage._over(self._bytes[start:max(start, stop)], self._root)
        return int(self._bytes[self._index(int(idx))])

    def __setitem__(self, idx, value) -> None:
        if not isinstance(idx, slice):
            idx = self._index(int(idx))
        self._bytes[idx] = np.asarray(value, dtype=np.int64).astype(np.uint8)

    def fill_(self, value) -> UntypedStorage:
        self._bytes[...] = np.asarray(value, dtype=np.int64).astype(np.uint8)
        return self

    def copy_(self, source, non_blocking=None) -> UntypedStorage:
        src = source.untyped() if isinstance(source, TypedStorage) else source
        if not isinstance(src, UntypedStorage):
            raise TypeError(f"copy_() takes a storage, got {type(source).__name__}")
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was "
                               f"{src.nbytes()} bytes")
        xp = get_array_module(self._bytes)
        self._bytes[...] = xp.asarray(src._bytes) if xp is np else to_device(src._bytes, self.device)
        return self

    def clone(self) -> UntypedStorage:
        new = self._bytes.copy()
        return UntypedStorage._over(new, new)

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())

    def __reduce__(self):
        return (_rebuild_untyped, (self._host().tobytes(),))

    # -- where it lives
    def cpu(self) -> UntypedStorage:
        return self if self.device.type == "cpu" else self.to(device="cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> UntypedStorage:
        return self.to(device=_device("cuda" if device is None else device if not isinstance(device, int) else f"cuda:{device}"))

    def to(self, *, device=None, non_blocking: bool = False) -> UntypedStorage:
        dev = _device(device) if device is not None else CPU
        if dev == self.device:
            return self
        new = to_device(self._bytes, dev)
        return UntypedStorage._over(new, new)

    def pin_memory(self, device=None) -> UntypedStorage:
        from .xp import cuda_is_available
        if not cuda_is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return self

    def share_memory_(self) -> UntypedStorage:
        """Already in shared memory: itself. Otherwise an error naming the fix: NumPy cannot move
        memory that tensors view (module docstring)."""
        if self.is_shared():
            return self
        raise RuntimeError(
            "share_memory_() of a storage: shardflow cannot move a storage into shared memory in place "
            "(the tensors viewing it would keep the old memory). Call tensor.share_memory_() on the "
            "tensor, or make a shared storage with UntypedStorage._new_shared(nbytes)")

    def resize_(self, size: int) -> UntypedStorage:
        if int(size) == self.nbytes():
            return self
        raise RuntimeError(
            f"Trying to resize storage that is not resizable: shardflow's storages are NumPy memory, "
            f"which cannot grow or shrink in place ({self.nbytes()} -> {int(size)} bytes). Make a new "
            "tensor of the size you need (shardflow.empty(n)) and copy into it")

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        head = "" if not body else body + "\n"
        return f"{head}[torch.storage.{type(self).__name__}(device={self.device}) of size {self.nbytes()}]"

    __str__ = __repr__


def _rebuild_untyped(data: bytes) -> UntypedStorage:
    return UntypedStorage(list(data)) if data else UntypedStorage(0)


def _map_file(filename, shared: bool, nbytes: int, npdtype):
    """``nbytes`` of ``filename`` mapped (shared: a writable map of the file, created or
    extended as needed; else a private copy-on-write map)."""
    import os
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(nbytes)
        return np.memmap(filename, dtype=np.uint8, mode="r+", shape=(nbytes,)).view(npdtype) if nbytes else np.zeros(0, npdtype)
    size = os.path.getsize(filename)
    if size < nbytes:
        raise RuntimeError(f"from_file: {filename} has {size} bytes, fewer than the {nbytes} asked for")
    return np.memmap(filename, dtype=np.uint8, mode="c", shape=(nbytes,)).view(npdtype) if nbytes else np.zeros(0, npdtype)


def from_file(filename, shared=None, size: int = 0, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False):
    """``torch.from_file``'s array: ``size`` elements of ``dtype`` (default dtype) mapped from a file."""
    d = as_dtype(dtype) if dtype is not None else get_default_dtype()
    return _map_file(filename, bool(shared), int(size) * d.itemsize, d.np)


# ---------------------------------------------------------------------------- TypedStorage
_DTYPE_CONVERSIONS = {"double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16",
                      "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8",
                      "bool": "bool", "complex_double": "complex128", "complex_float": "complex64"}


class TypedStorage:
    """An ``UntypedStorage`` read as ``dtype`` (``torch.TypedStorage``, deprecated in torch):
    ``TypedStorage(size | sequence, dtype=, device=)`` or ``TypedStorage(wrap_storage=, dtype=)``."""

    is_sparse = False

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None, _internal: bool = False):
        if not _internal:
            _warn_typed_storage_removal()
        self.dtype = as_dtype(dtype) if dtype is not None else get_default_dtype()
        if wrap_storage is not None:
            if args or device is not None:
                raise RuntimeError("TypedStorage(wrap_storage=...) takes no size, sequence or device")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"expected an UntypedStorage for wrap_storage, got {type(wrap_storage).__name__}")
            self._untyped_storage = wrap_storage
            return
        if len(args) > 1:
            raise TypeError(f"TypedStorage() takes at most one positional argument, got {len(args)}")
        arg = args[0] if args else 0
        if isinstance(arg, int | np.integer) and not isinstance(arg, bool):
            data = np.zeros(int(arg), self.dtype.np)
        elif isinstance(arg, list | tuple):
            data = np.asarray(arg).astype(self.dtype.np) if arg else np.zeros(0, self.dtype.np)
        else:
            raise TypeError(f"{type(self).__name__}() takes a size, a sequence or wrap_storage=, got "
                            f"{type(arg).__name__}")
        if device is not None and _device(device).type != "cpu":
            data = to_device(data, _device(device))
        self._untyped_storage = storage_of(data)

    @classmethod
    def _of(cls, untyped: UntypedStorage, dtype) -> TypedStorage:
        return TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)

    @classmethod
    def _read_buffer(cls, buffer, byte_order, count, offset, dtype, device) -> TypedStorage:
        if dtype.itemsize > 1 and byte_order not in ("little", "big", "native"):
            raise ValueError(f"from_buffer: byte_order must be 'little', 'big' or 'native' for "
                             f"{dtype}, got {byte_order!r}")
        npd = dtype.np
        if byte_order in ("little", "big") and npd.kind != "V":
            npd = npd.newbyteorder("<" if byte_order == "little" else ">")
        data = np.frombuffer(buffer, dtype=npd, count=count, offset=offset).astype(dtype.np)
        if device is not None and _device(device).type != "cpu":
            data = to_device(data, _device(device))
        return cls._of(storage_of(data), dtype)

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count: int = -1, offset: int = 0, *, dtype=None,
                    device=None) -> TypedStorage:
        d = getattr(cls, "_legacy_dtype", None) or (as_dtype(dtype) if dtype is not None else None)
        if d is None:
            raise RuntimeError("from_buffer: TypedStorage.from_buffer needs dtype=")
        return cls._read_buffer(buffer, byte_order, count, offset, d, device)

    @classmethod
    def from_file(cls, filename, shared: bool = False, size: int = 0) -> TypedStorage:
        d = getattr(cls, "_legacy_dtype", None) or get_default_dtype()
        return cls._of(storage_of(_map_file(filename, shared, int(size) * d.itemsize, d.np)), d)

    def _new_shared(self, size: int, *, device=None) -> TypedStorage:
        """A zero-filled storage of ``size`` elements of this dtype in shared memory (the
        buffer DataLoader workers collate batches into)."""
        return TypedStorage._of(UntypedStorage._new_shared(int(size) * self.dtype.itemsize, device=device), self.dtype)

    # -- what it is
    def _array(self):
        """This storage's elements: a 1-D array of ``dtype`` over its bytes."""
        b = self._untyped_storage._bytes
        n = b.size // self.dtype.itemsize
        return b[:n * self.dtype.itemsize].view(self.dtype.np)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _typed(self) -> TypedStorage:
        return self

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self.size() * self.dtype.itemsize

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def get_device(self) -> int:
        return self._untyped_storage.get_device()

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def is_pinned(self, device=None) -> bool:
        return False

    def pickle_storage_type(self) -> str:
        return legacy_storage_class(self.dtype).__name__

    def type(self, dtype=None, non_blocking: bool = False):
        """No argument: the legacy class's name (``'torch.FloatStorage'``); a legacy class or
        its name: this storage converted to that class's dtype."""
        if dtype is None:
            prefix = "torch." if self.device.type == "cpu" else "torch.cuda."
            return prefix + legacy_storage_class(self.dtype).__name__
        name = dtype if isinstance(dtype, str) else getattr(dtype, "__name__", "")
        cls = LEGACY_STORAGES.get(name.rsplit(".", 1)[-1])
        if cls is None:
            raise TypeError(f"type(): expected a storage class such as shardflow.DoubleStorage or "
                            f"'torch.DoubleStorage', got {dtype!r}")
        return self._to(cls.dtype)

    def _to(self, dtype) -> TypedStorage:
        d = as_dtype(dtype)
        if d == self.dtype:
            return self
        return TypedStorage._of(storage_of(self._array().astype(d.np)), d)

    def __getattr__(self, name):
        if name in _DTYPE_CONVERSIONS:  # .float(), .double(), .long() ...
            target = _DTYPE_CONVERSIONS[name]
            return lambda: self._to(target)
        raise AttributeError(f"'TypedStorage' object has no attribute {name!r}")

    # -- values
    def _host(self) -> np.ndarray:
        a = self._array()
        return a if isinstance(a, np.ndarray) else to_device(a, CPU)

    def tolist(self) -> list:
        a = self._host()
        return (a.astype(np.float32) if a.dtype.kind == "V" else a).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        n = self.size()
        i = int(idx)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        v = self._host()[i % n]
        return float(v) if v.dtype.kind == "V" else v.item()

    def __setitem__(self, idx, value) -> None:
        if not isinstance(idx, slice):
            n = self.size()
            if not -n <= int(idx) < n:
                raise IndexError(f"index {int(idx)} out of range for storage of size {n}")
            idx = int(idx) % n
        self._array()[idx] = _as_value(value, self.dtype)

    def fill_(self, value) -> TypedStorage:
        self._array()[...] = _as_value(value, self.dtype)
        return self

    def copy_(self, source, non_blocking=None) -> TypedStorage:
        if isinstance(source, TypedStorage):
            if source.size() != self.size():
                raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was "
                                   f"{source.size() * self.dtype.itemsize} bytes")
            src = source._array()
            xp = get_array_module(self._array())
            self._array()[...] = (src if xp is np else to_device(src, self.device)).astype(self.dtype.np)
        else:
            self._untyped_storage.copy_(source)
        return self

    def clone(self) -> TypedStorage:
        return TypedStorage._of(self._untyped_storage.clone(), self.dtype)

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())

    def __reduce__(self):
        return (_rebuild_typed, (self._untyped_storage, self.dtype.name))

    # -- where it lives
    def cpu(self) -> TypedStorage:
        return self if self.device.type == "cpu" else TypedStorage._of(self._untyped_storage.cpu(), self.dtype)

    def cuda(self, device=None, non_blocking: bool = False) -> TypedStorage:
        return TypedStorage._of(self._untyped_storage.cuda(device), self.dtype)

    def to(self, *, device=None, non_blocking: bool = False) -> TypedStorage:
        return TypedStorage._of(self._untyped_storage.to(device=device), self.dtype)

    def pin_memory(self, device=None) -> TypedStorage:
        self._untyped_storage.pin_memory(device)
        return self

    def share_memory_(self) -> TypedStorage:
        self._untyped_storage.share_memory_()
        return self

    def resize_(self, size: int) -> TypedStorage:
        self._untyped_storage.resize_(int(size) * self.dtype.itemsize)
        return self

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        head = "" if not body else body + "\n"
        return (f"{head}[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {self.size()}]")

    __str__ = __repr__


def _as_value(value, dtype):
    return cast(np.asarray(value), dtype)  # torch's conversion (float8_e4m3fn saturates)


def _rebuild_typed(untyped: UntypedStorage, dtype_name: str) -> TypedStorage:
    return TypedStorage._of(untyped, dtype_name)


def is_storage(obj) -> bool:
    """``torch.is_storage``: whether ``obj`` is an ``UntypedStorage`` or a ``TypedStorage``."""
    return isinstance(obj, UntypedStorage | TypedStorage)


# ---------------------------------------------------------------------------- legacy classes
class _LegacyStorageMeta(type):
    """``isinstance(s, FloatStorage)``: ``s`` is a TypedStorage of float32 (torch's rule)."""

    def __instancecheck__(cls, instance) -> bool:
        if type(instance) is TypedStorage:
            return getattr(cls, "_legacy_dtype", None) == instance.dtype
        return type.__instancecheck__(cls, instance)

    @property
    def dtype(cls):
        return cls._legacy_dtype


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    """``FloatStorage(...)`` and siblings: a ``TypedStorage`` of the class's dtype."""

    _legacy_dtype = None

    def __new__(cls, *args, wrap_storage=None, device=None, dtype=None):
        if dtype is not None and as_dtype(dtype) != cls._legacy_dtype:
            raise RuntimeError(f"{cls.__name__}: dtype= must be {cls._legacy_dtype} or left out, got {dtype}")
        if args and isinstance(args[0], UntypedStorage | TypedStorage):
            raise TypeError(f"{cls.__name__}() takes a size, a sequence or wrap_storage=, got "
                            f"{type(args[0]).__name__}; use {cls.__name__}(wrap_storage=storage)")
        _warn_typed_storage_removal()
        return TypedStorage(*args, wrap_storage=wrap_storage, device=device, dtype=cls._legacy_dtype,
                            _internal=True)


_LEGACY_DTYPES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
                  "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
                  "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
                  "BoolStorage": "bool", "ComplexDoubleStorage": "complex128",
                  "ComplexFloatStorage": "complex64"}
LEGACY_STORAGES: dict[str, type] = {
    name: _LegacyStorageMeta(name, (_LegacyStorage,), {"_legacy_dtype": as_dtype(d), "__module__": "torch",
                                                       "__qualname__": name})
    for name, d in _LEGACY_DTYPES.items()}
_LEGACY_BY_DTYPE = {cls._legacy_dtype: cls for cls in LEGACY_STORAGES.values()}


def legacy_storage_class(dtype) -> type:
    """``FloatStorage`` for float32 ... (``Tensor.storage_type()``)."""
    d = as_dtype(dtype)
    if d not in _LEGACY_BY_DTYPE:
        raise RuntimeError(f"no legacy storage class for dtype {d}")
    return _LEGACY_BY_DTYPE[d]


def typed_view(source, dtype) -> np.ndarray:
    """The 1-D array of ``dtype`` elements over ``source``'s bytes (a TypedStorage of another
    dtype is refused as torch does)."""
    d = as_dtype(dtype)
    if isinstance(source, TypedStorage):
        if source.dtype != d:
            raise RuntimeError(f"Expected a Storage of type {_SCALAR_TYPE_NAMES[d.name]} or an UntypedStorage, "
                               f"but got type {_SCALAR_TYPE_NAMES[source.dtype.name]} for argument 1 'storage'")
        return source._array()
    return TypedStorage._of(source, d)._array()


DoubleStorage = LEGACY_STORAGES["DoubleStorage"]
FloatStorage = LEGACY_STORAGES["FloatStorage"]
HalfStorage = LEGACY_STORAGES["HalfStorage"]
BFloat16Storage = LEGACY_STORAGES["BFloat16Storage"]
LongStorage = LEGACY_STORAGES["LongStorage"]
IntStorage = LEGACY_STORAGES["IntStorage"]
ShortStorage = LEGACY_STORAGES["ShortStorage"]
CharStorage = LEGACY_STORAGES["CharStorage"]
ByteStorage = LEGACY_STORAGES["ByteStorage"]
BoolStorage = LEGACY_STORAGES["BoolStorage"]
ComplexDoubleStorage = LEGACY_STORAGES["ComplexDoubleStorage"]
ComplexFloatStorage = LEGACY_STORAGES["ComplexFloatStorage"]
Storage = FloatStorage  # torch.Storage is the default-dtype legacy class
