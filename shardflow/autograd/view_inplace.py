"""An in-place op on a *view* while the graph is recorded: PyTorch's ``CopySlices``.

``y = x * 2; y[0].add_(1)`` must change ``y`` (the view ``y[0]`` shares its memory) and
give ``y`` a history through the add. shardflow records graph in-place ops out of place
(``Tensor._inplace``: the tensor is rebased onto the result, so arrays a backward saved
stay valid); on a view that rebased only the view, and the base silently kept its old
values and gradient.

So here, for a view ``v`` of base ``b`` (``v._base``, set by every view op:
``ops.shape._share``, basic indexing):

1. where ``v``'s elements sit in ``b`` (``view_positions``: each element's byte offset from
   ``b``'s first element, mapped back to ``b``'s logical index; any layout, negative
   strides and diagonals included);
2. ``b`` is rebased onto ``CopySlices(b, result)``: a copy of ``b``'s array with the result
   written at those positions (backward: the gradient with those positions zeroed for the
   old ``b``, the gradient at those positions for the result);
3. ``v`` becomes the view of the new array at the same place (its history: the result's),
   sharing ``b``'s new version counter.

The same on device arrays (CuPy): the positions are worked out on the host from shapes and
strides (no device data is read), and ``CopySlices`` runs on the array module of its input.

Left as deviations: other views of ``b`` taken before the op keep the old memory (PyTorch's
share it and see the change). Writing through an expanded view (several elements at one
place) raises PyTorch's error; a view of a leaf that requires grad refuses, as PyTorch does.
``CopySlices`` has no ``backward_graph``: a second derivative through such an op raises
(naming it) rather than being wrong.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module
from ..backend.meta import is_meta_array
from .function import Function


def _address(a) -> int:
    """The address of ``a``'s first element: NumPy's array interface, CuPy's ``data.ptr``."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data.ptr


def _offsets(a) -> np.ndarray:
    """Byte offset of each element of ``a`` from its first element, in ``a``'s logical
    (C) order, as an int64 NumPy array of ``a``'s shape (from its shape and strides only)."""
    off = np.zeros(a.shape, dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[axis] = n
        off += (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return off


def may_overlap(a) -> bool:
    """Whether two elements of ``a`` might share memory, from its shape and strides alone
    (NumPy's internal-overlap test): False when, the dimensions taken by growing ``|stride|``,
    each stride steps past everything the smaller ones reach. Views made by slicing,
    transposing, reshaping or a diagonal never overlap; an ``expand`` or ``as_strided`` may."""
    reach = a.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1):
        if stride < reach:
            return True
        reach += stride * (n - 1)
    return False


def view_positions(base, view) -> np.ndarray | None:
    """For each element of ``view`` (a view into ``base``'s memory, NumPy or CuPy), the flat logical
    (C-order) index of the same element in ``base``, as an int64 array of ``view``'s shape;
    None when ``view`` is not made of whole elements of ``base``. Byte offsets from ``base``'s
    first element are matched by sorting ``base``'s (any layout: negative strides, diagonals,
    overlapping views)."""
    if base.dtype != view.dtype or base.size == 0:
        return None
    start = _address(view) - _address(base)
    b_off = _offsets(base).reshape(-1)
    v_off = (_offsets(view) + start).reshape(-1)
    order = np.argsort(b_off, kind="stable")
    sorted_off = b_off[order]
    at = np.minimum(np.searchsorted(sorted_off, v_off), sorted_off.size - 1)
    if not np.array_equal(sorted_off[at], v_off):
        return None
    return order[at].reshape(view.shape)


class CopySlices(Function):
    """``out = base`` with ``src`` written at the flat ``positions``; backward: the gradient
    with those positions zeroed (for ``base``) and the gradient read there (for ``src``)."""

    save_inputs = ()

    def forward(self, base, src, positions=None):
        xp = get_array_module(base)
        self.positions = positions  # (on base's device)
        values = xp.broadcast_to(src, positions.shape).reshape(-1)
        if xp is np:
            out = np.copy(base, order="K")  # base's strides: the view can stay a view of it
            np.put(out, positions.reshape(-1), values)
        else:
            out = base.copy()  # C order, so the flat index is the logical one
            out.reshape(-1)[positions.reshape(-1)] = values
        return out

    def backward(self, g):
        flat = self.positions.reshape(-1)
        gb = g.copy()  # C order
        gs = gb.reshape(-1)[flat].reshape(self.positions.shape)
        gb.reshape(-1)[flat] = 0
        return gb, gs


def inplace_on_view(view, result) -> bool:
    """Finish a recorded in-place op on ``view`` (module docstring); False when ``view``'s
    memory cannot be placed in its base's (the caller then rebases the view alone)."""
    base = view._base
    if base.array is view.array or type(base.array) is not type(view.array):
        return False
    if is_meta_array(base.array):
        return False  # (no memory to place the view in: the view alone is rebased)
    positions = view_positions(base.array, view.array)
    if positions is None:
        return False
    # (np.unique only where the strides allow an overlap: hashing every position cost
    # 18 ms for d2l's masked_softmax, ``X[~mask] = value`` on a 100x100-row view)
    if positions.size and may_overlap(view.array) and np.unique(positions).size != positions.size:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation; "
            "wrap the update in `with shardflow.no_grad():` or change the leaf itself out of place")
    xp = get_array_module(base.array)
    new = CopySlices.apply(base, result, positions=positions if xp is np else xp.asarray(positions))
    old_array = base.array
    base.array = new.array
    base.grad_fn = new.grad_fn
    base._output_nr = 0
    base.requires_grad = True
    base._version_counter = new._version_counter
    start = _address(view.array) - _address(old_array)
    if new.array.strides == old_array.strides and new.array.flags.c_contiguous:
        # the same place in the new memory: the view keeps aliasing its base
        tail = new.array.reshape(-1)[start // new.array.itemsize:]
        view.array = xp.lib.stride_tricks.as_strided(tail, view.array.shape, view.array.strides)
    else:
        view.array = new.array.reshape(-1)[xp.asarray(positions).reshape(-1)].reshape(positions.shape) \
            if xp is not np else np.take(new.array, positions)
    view.grad_fn = result.grad_fn
    view._output_nr = result._output_nr
    view.requires_grad = True
    view._version_counter = base._version_counter
    return True
