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

Left as deviations: other views of ``b`` taken before the op keep the old memory (PyTorch's
share it and see the change). Writing through an expanded view (several elements at one
place) raises PyTorch's error; a view of a leaf that requires grad refuses, as PyTorch does.
``CopySlices`` has no ``backward_graph``: a second derivative through such an op raises
(naming it) rather than being wrong.
"""

from __future__ import annotations

import numpy as np

from .function import Function


def _offsets(a: np.ndarray) -> np.ndarray:
    """Byte offset of each element of ``a`` from its first element, in ``a``'s logical
    (C) order, as an int64 array of ``a``'s shape."""
    off = np.zeros(a.shape, dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[axis] = n
        off += (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return off


def view_positions(base: np.ndarray, view: np.ndarray) -> np.ndarray | None:
    """For each element of ``view`` (a NumPy view into ``base``'s memory), the flat logical
    (C-order) index of the same element in ``base``, as an int64 array of ``view``'s shape;
    None when ``view`` is not made of whole elements of ``base``. Byte offsets from ``base``'s
    first element are matched by sorting ``base``'s (any layout: negative strides, diagonals,
    overlapping views)."""
    if base.dtype != view.dtype or base.size == 0:
        return None
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
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
        self.positions = positions
        out = np.copy(base, order="K")
        np.put(out, positions.reshape(-1), np.broadcast_to(src, positions.shape).reshape(-1))
        return out

    def backward(self, g):
        flat = self.positions.reshape(-1)
        gb = np.array(g, copy=True)
        np.put(gb, flat, 0)
        gs = np.take(g, flat).reshape(self.positions.shape)
        return gb, gs


def inplace_on_view(view, result) -> bool:
    """Finish a recorded in-place op on ``view`` (module docstring); False when ``view``'s
    memory cannot be placed in its base's (the caller then rebases the view alone)."""
    base = view._base
    if base.array is view.array or type(base.array) is not np.ndarray or type(view.array) is not np.ndarray:
        return False  # (device arrays: the view alone is rebased, as before; docs/COMPAT.md)
    positions = view_positions(base.array, view.array)
    if positions is None:
        return False
    if positions.size and np.unique(positions).size != positions.size:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation; "
            "wrap the update in `with shardflow.no_grad():` or change the leaf itself out of place")
    new = CopySlices.apply(base, result, positions=positions)
    old_array = base.array
    base.array = new.array
    base.grad_fn = new.grad_fn
    base._output_nr = 0
    base.requires_grad = True
    base._version_counter = new._version_counter
    start = view.array.__array_interface__["data"][0] - old_array.__array_interface__["data"][0]
    if new.array.strides == old_array.strides and new.array.flags.c_contiguous:
        # the same place in the new memory: the view keeps aliasing its base
        view.array = np.ndarray(view.array.shape, view.array.dtype, buffer=new.array,
                                offset=start, strides=view.array.strides)
    else:
        view.array = np.take(new.array, positions)
    view.grad_fn = result.grad_fn
    view._output_nr = result._output_nr
    view.requires_grad = True
    view._version_counter = base._version_counter
    return True
