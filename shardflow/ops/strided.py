"""Raw-stride views: ``as_strided`` / ``Tensor.as_strided_`` / ``as_strided_scatter``
(``as_strided_copy`` is in view_copies.py).

A shardflow tensor is an array (NumPy or CuPy); its *storage*, in PyTorch's sense, is the
memory of the array at the root of its ``.base`` chain (the array that owns the allocation),
read in the tensor's dtype. ``storage_offset()`` is the tensor's first element counted from the
start of that memory (ops/tensor_methods.py), and ``stride()`` its strides in elements, so
``as_strided(size, stride, storage_offset)`` means what it means in PyTorch: a new array over
the same memory starting ``storage_offset`` elements into it (default: the input's own offset)
with the given strides. It is a view: writes through it show in the input, and it shares the
input's version counter like the other views (ops/shape.py ``_share``). Bounds, negative
strides and negative offsets are refused with PyTorch's messages before anything is made.

Gradient (PyTorch's ``as_strided_backward``): each output element is one storage position
``offset + sum_k i_k * stride_k``. The output gradient is scatter-added into a storage-sized
buffer (overlapping windows add up), then read back at the input's own storage positions;
where the input itself overlaps in memory (an expanded input), each position's sum is divided
by the number of input elements that share it, so the expand's backward sums it back to once.
The op is linear, so the higher-order gradient is the same pair of array kernels
(``_grad_graph.linear_adjoint``: ``backward`` and ``linear_forward``).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..backend.ufuncs import scatter_at
from . import _grad_graph as _gg
from .shape import _share

__all__ = ["as_strided", "as_strided_", "as_strided_scatter"]


# ---------------------------------------------------------------------------- storage geometry
def _root(a):
    """The array at the end of ``a``'s ``.base`` chain (the owner of the memory)."""
    xp = get_array_module(a)
    root, node = a, getattr(a, "base", None)
    while node is not None:
        if isinstance(node, xp.ndarray):
            root = node
        node = getattr(node, "base", None)
    return root


# NumPy 2 moved byte_bounds to numpy.lib.array_utils (numpy>=1.24 is supported)
_byte_bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or np.byte_bounds


def _pointer(a) -> int:
    return int(a.__array_interface__["data"][0]) if isinstance(a, np.ndarray) else int(a.data.ptr)


def _storage_extent(a) -> tuple[int, int]:
    """``(start_pointer, nbytes)`` of the memory ``a`` views."""
    root = _root(a)
    if isinstance(root, np.ndarray):
        low, high = _byte_bounds(root)
        return int(low), int(high - low)
    return _pointer(root), int(root.nbytes)


def storage_geometry(a) -> tuple[int, int]:
    """``(storage_offset, storage_size)`` of array ``a`` in elements of its dtype."""
    start, nbytes = _storage_extent(a)
    return (_pointer(a) - start) // a.itemsize, nbytes // a.itemsize


def _positions(xp, shape, strides, offset):
    """The storage position of every element of a ``shape`` array with ``strides`` (elements)."""
    pos = xp.full(tuple(shape), offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, strides, strict=True)):
        pos = pos + (xp.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
    return pos


def _check(a, size, stride, storage_offset, op="as_strided") -> tuple[tuple, tuple, int]:
    """Normalise and check ``size``/``stride``/``storage_offset`` against ``a``'s storage with
    PyTorch's messages; returns them as int tuples and an int offset."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if storage_offset is not None and (isinstance(storage_offset, bool) or
                                       not isinstance(storage_offset, int | np.integer)):
        raise TypeError(f"{op}(): argument 'storage_offset' (position 4) must be int, not "
                        f"{type(storage_offset).__name__}")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    own_offset, storage_size = storage_geometry(a)
    offset = own_offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if 0 not in size:
        needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))) * a.itemsize
        if needed > storage_size * a.itemsize:
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                f"itemsize {a.itemsize} requiring a storage size of {needed} are out of bounds for storage "
                f"of size {storage_size * a.itemsize}"
            )
    return size, stride, offset


class _Interface:
    """An ``__array_interface__`` holder: NumPy builds an array over its memory and keeps
    ``base`` (the memory's owner) alive."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def strided_array(a, size, stride, offset):
    """A view over ``a``'s storage: ``size``/``stride`` in elements from element ``offset``
    (already checked by ``_check``)."""
    own_offset, _ = storage_geometry(a)
    delta = (offset - own_offset) * a.itemsize
    strides = tuple(s * a.itemsize for s in stride)
    if isinstance(a, np.ndarray):
        interface = {"version": 3, "shape": size, "strides": strides, "typestr": a.dtype.str,
                     "data": (_pointer(a) + delta, not a.flags.writeable)}
        if a.dtype.fields is not None or a.dtype.kind == "V":
            interface["descr"] = a.dtype.descr
        out = np.asarray(_Interface(interface, _root(a)))
        return out.view(a.dtype) if out.dtype != a.dtype else out
    # CuPy: the root array owns the allocation (contiguous in some order): its elements in
    # memory order are the storage, a view from which stride_tricks builds the window
    xp = get_array_module(a)
    flat = _root(a).ravel(order="K")
    return xp.lib.stride_tricks.as_strided(flat[offset:], shape=size, strides=strides)


# ---------------------------------------------------------------------------- autograd
class AsStrided(Function):
    """The view and its gradient (module docstring)."""

    save_inputs = ()

    def forward(self, a, size=(), stride=(), offset=0):
        self.in_geometry = (a.shape, tuple(s // a.itemsize for s in a.strides), storage_geometry(a)[0])
        self.out_geometry = (size, stride, offset)
        return strided_array(a, size, stride, offset)

    def _maps(self, xp):
        pin = _positions(xp, *self.in_geometry).reshape(-1)
        pout = _positions(xp, *self.out_geometry).reshape(-1)
        n = 1 + max(int(pin.max()) if pin.size else 0, int(pout.max()) if pout.size else 0)
        return pin, pout, n

    def backward(self, g):  # (out shape) -> (in shape)
        xp = get_array_module(g)
        pin, pout, n = self._maps(xp)
        storage = xp.zeros(n, g.dtype)
        scatter_at("add", storage, pout, g.reshape(-1))
        grad = storage[pin]
        count = xp.zeros(n, np.int64)
        xp.add.at(count, pin, 1)
        if count.size and int(count.max()) > 1:  # the input overlaps itself: share each position's sum
            grad = grad / count[pin].astype(grad.dtype)
        return grad.reshape(self.in_geometry[0])

    def linear_forward(self, h):  # (in shape) -> (out shape): the op on h laid out like the input
        xp = get_array_module(h)
        pin, pout, n = self._maps(xp)
        storage = xp.zeros(n, h.dtype)
        storage[pin] = h.reshape(-1)
        return storage[pout].reshape(self.out_geometry[0])

    def backward_graph(self, g):
        return _gg.linear_adjoint(self, g)


# ---------------------------------------------------------------------------- the ops
@register("as_strided")
def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``torch.as_strided``: a view of ``input``'s storage with ``size``, ``stride`` (elements)
    starting at ``storage_offset`` (default: ``input.storage_offset()``)."""
    size, stride, offset = _check(input.array, size, stride, storage_offset)
    return _share(AsStrided.apply(input, size=size, stride=stride, offset=offset), input)


@register("as_strided_")
def as_strided_(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``Tensor.as_strided_``: ``input`` itself becomes that view of its storage (on a
    tensor with history, the history records the ``as_strided``; a leaf that requires grad
    is refused, as for every in-place op)."""
    size, stride, offset = _check(input.array, size, stride, storage_offset, "as_strided_")
    result = as_strided(input, size, stride, offset)
    if result.requires_grad and result.grad_fn is not None:
        return input._inplace(result)
    input.array = result.array
    return input


class AsStridedScatter(Function):
    """``out = input.clone(); out.as_strided(size, stride, offset).copy_(src)``: the gradient of
    ``input`` is ``g`` with the written positions zeroed; ``src``'s is ``g`` read at them."""

    save_inputs = ()

    def forward(self, a, src, size=(), stride=(), offset=0):
        xp = get_array_module(a)
        out = xp.array(a, order="K", copy=True)  # PyTorch's clone keeps a dense input's layout
        self.out_geometry = (out.shape, tuple(s // out.itemsize for s in out.strides), 0)
        self.window = (size, stride, offset)
        strided_array(out, size, stride, offset)[...] = src
        return out

    def backward(self, g):
        xp = get_array_module(g)
        pout = _positions(xp, *self.out_geometry).reshape(-1)
        pwin = _positions(xp, *self.window).reshape(-1)
        storage = xp.zeros((int(pout.max()) + 1) if pout.size else 0, g.dtype)
        storage[pout] = g.reshape(-1)
        g_src = storage[pwin].reshape(self.window[0])
        storage[pwin] = 0
        return storage[pout].reshape(self.out_geometry[0]), g_src


@register("as_strided_scatter")
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``torch.as_strided_scatter``: a copy of ``input`` (fresh storage, its layout kept) with
    ``src`` written where ``input.as_strided(size, stride, storage_offset)`` would look; the
    offset counts from the start of the copy's storage (0 by default)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    size, stride, _ = _check(input.array, size, stride, storage_offset, "as_strided_scatter")
    offset = 0 if storage_offset is None else int(storage_offset)
    if tuple(src.shape) != size:
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
            f"slice size = {list(size)}"
        )
    needed = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if 0 not in size and needed > math.prod(input.shape):
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{input.array.itemsize} requiring a storage size of {needed * input.array.itemsize} are out of "
            f"bounds for storage of size {math.prod(input.shape) * input.array.itemsize}"
        )
    if src.dtype != input.dtype:
        src = src.to(input.dtype)
    return AsStridedScatter.apply(input, src, size=size, stride=stride, offset=offset)

