"""Tensor methods over storages (``backend/storage.py``): ``untyped_storage()``, ``storage()``
(a ``TypedStorage``, with torch's deprecation warning), ``_typed_storage()``,
``storage_type()``, ``set_`` (a tensor made a view of a storage or of another tensor's
memory), ``is_set_to``, ``const_data_ptr``; and ``torch.from_file``.

``set_(source, storage_offset, size, stride)`` rebinds the tensor's array to an
``as_strided`` view of the storage's elements, so it shares the storage (its
``untyped_storage()`` is the same object). NumPy memory cannot grow: a view reaching past
the storage's end raises (torch grows the storage). Like any in-place op it is refused on a
leaf that requires grad while autograd records, and bumps the version counter.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..backend import storage as _storage
from ._factory_options import check_factory_options

__all__ = ["from_file"]


@register("untyped_storage")
def untyped_storage(self) -> _storage.UntypedStorage:
    """The bytes behind this tensor's memory: one object for all views of one array."""
    return _storage.storage_of(self.array)


@register("_typed_storage")
def _typed_storage(self) -> _storage.TypedStorage:
    return _storage.TypedStorage._of(_storage.storage_of(self.array), self.dtype)


@register("storage")
def storage(self) -> _storage.TypedStorage:
    """``TypedStorage`` of this tensor's dtype over its storage (deprecated in torch: warns once)."""
    _storage._warn_typed_storage_removal(stacklevel=3)  # past the dispatch wrapper, at the caller
    return _typed_storage(self)


@register("storage_type")
def storage_type(self) -> type:
    """The legacy storage class of this tensor's dtype (``shardflow.FloatStorage`` ...)."""
    return _storage.legacy_storage_class(self.dtype)


@register("const_data_ptr")
def const_data_ptr(self) -> int:
    return self.data_ptr()


@register("storage_offset")
def storage_offset(self) -> int:
    """Elements between the storage's first byte and this tensor's first element."""
    return _storage.storage_offset_of(self.array)


def _contiguous_strides(size) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _view_of_storage(source, dtype, offset: int, size, stride):
    """The array ``(size, stride)`` at element ``offset`` of ``source``'s elements."""
    elems = _storage.typed_view(source, dtype)  # (N,)
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    numel = int(np.prod(size)) if size else 1
    need = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) if numel else offset
    if need > elems.size:
        raise RuntimeError(
            f"set_: size {list(size)}, stride {list(stride)} and storage offset {offset} need {need} "
            f"elements, but the storage holds {elems.size} ({dtype}); shardflow's storages cannot grow "
            "(NumPy memory). Give a size that fits, or make a larger storage")
    item = elems.itemsize
    strides = tuple(s * item for s in stride)
    if isinstance(elems, np.ndarray):  # base = elems: the .base chain stays arrays (is_shared)
        return np.ndarray(tuple(size), elems.dtype, buffer=elems, offset=offset * item, strides=strides)
    return get_array_module(elems).lib.stride_tricks.as_strided(elems[offset:], shape=tuple(size), strides=strides)


@register("set_")
def set_(self, source=None, storage_offset=None, size=None, stride=None) -> Tensor:
    """``set_()``: an empty tensor; ``set_(tensor)``: share its memory, size and strides;
    ``set_(storage[, storage_offset, size, stride])``: a view of the storage (module docstring)."""
    self._check_inplace_allowed("set_()")
    if source is None:
        new = get_array_module(self.array).empty((0,), self.array.dtype)
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}")
        new = source.array
    elif _storage.is_storage(source):
        if size is None and storage_offset not in (None, 0):
            raise TypeError("set_() received an invalid combination of arguments: a storage offset needs "
                            "a size too: set_(storage, storage_offset, size, stride=None)")
        offset = int(storage_offset or 0)
        if size is None:
            itemsize = self.dtype.itemsize
            size = (source.nbytes() // itemsize if isinstance(source, _storage.UntypedStorage) else source.size(),)
        size = tuple(int(n) for n in size)
        stride = _contiguous_strides(size) if stride is None else tuple(int(s) for s in stride)
        if len(stride) != len(size):
            raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides for {len(size)} sizes")
        new = _view_of_storage(source, self.dtype, offset, size, stride)
    else:
        raise TypeError(f"set_() takes a Tensor or a storage (UntypedStorage / TypedStorage), got "
                        f"{type(source).__name__}")
    self.array = new
    self._version_counter[0] += 1
    return self


@register("is_set_to")
def is_set_to(self, tensor) -> bool:
    """True when both tensors view the same storage at the same offset, sizes and strides."""
    a, b = self.array, tensor.array
    return (_storage.root_of(a) is _storage.root_of(b) and self.storage_offset() == tensor.storage_offset()
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def from_file(filename, shared=None, size: int = 0, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``torch.from_file``: a 1-D tensor of ``size`` elements mapped from ``filename``
    (``shared=True``: writes go to the file, which is created or extended as needed).
    ``device=`` other than the CPU: a copy there (the mapping stays on the host)."""
    check_factory_options("from_file", layout, pin_memory)
    out = _wrap(_storage.from_file(filename, shared, size, dtype=dtype))
    if device is not None and str(device) != "cpu":
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out
