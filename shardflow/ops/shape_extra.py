"""More shape and layout ops with PyTorch's names, all compositions of ``shape.py`` /
``index.py`` ops (their gradients are those ops'): ``atleast_1d/2d/3d``, ``column_stack``,
``dstack``, ``row_stack``, ``hsplit`` / ``vsplit`` / ``dsplit``, ``rot90``, ``block_diag``,
``cartesian_prod``, ``combinations``; and index builders without gradients:
``tril_indices``, ``triu_indices``, ``unravel_index``, ``broadcast_shapes``.

``rot90(x, k, dims)`` turns the ``dims[0]`` axis towards ``dims[1]``: ``k = 1`` is
``flip(dims[1])`` then ``transpose``; ``k = 2`` flips both; ``k = 3`` is ``transpose`` then
``flip(dims[1])``. ``combinations(x, r, with_replacement)`` lists the index tuples in
lexicographic order (``itertools``) and gathers them.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module, int64
from ._factory_options import check_factory_options
from ._util import wrap_dim

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "column_stack", "dstack", "row_stack", "hsplit", "vsplit",
           "dsplit", "rot90", "block_diag", "cartesian_prod", "combinations", "tril_indices", "triu_indices",
           "unravel_index", "broadcast_shapes"]


def _ops():
    from .. import ops

    return ops


def _atleast(tensors, n, shape_of):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
        many = True
    else:
        many = len(tensors) > 1
    out = [t if t.ndim >= n else t.reshape(shape_of(tuple(t.shape))) for t in tensors]
    return tuple(out) if many else out[0]


@register("atleast_1d")
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d tensor becomes shape (1,))."""
    return _atleast(tensors, 1, lambda s: (1,))


@register("atleast_2d")
def atleast_2d(*tensors):
    """At least 2 dims: () -> (1, 1), (n,) -> (1, n)."""
    return _atleast(tensors, 2, lambda s: (1,) * (2 - len(s)) + s)


@register("atleast_3d")
def atleast_3d(*tensors):
    """At least 3 dims: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(tensors, 3, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


@register("column_stack")
def column_stack(tensors) -> Tensor:
    """Stack as columns: 0-d/1-d tensors become ``(n, 1)`` columns, then ``hstack``."""
    cols = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors]
    return _ops().hstack(cols)


@register("dstack")
def dstack(tensors) -> Tensor:
    """Concatenate along the third dim after ``atleast_3d``."""
    return _ops().cat([atleast_3d(t) for t in tensors], 2)


@register("row_stack")
def row_stack(tensors) -> Tensor:
    """``vstack``."""
    return _ops().vstack(tensors)


def _split(input, sections, dim, name):
    if isinstance(sections, int):
        if input.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!")
        return _ops().tensor_split(input, sections, dim)
    return _ops().tensor_split(input, list(sections), dim)


@register("hsplit")
def hsplit(input, sections):
    """Split along dim 1 (dim 0 for a 1-d tensor) into equal parts or at the given indices."""
    if input.ndim < 1:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!")
    return _split(input, sections, 1 if input.ndim > 1 else 0, "hsplit")


@register("vsplit")
def vsplit(input, sections):
    """Split along dim 0."""
    if input.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {input.ndim} dimensions!")
    return _split(input, sections, 0, "vsplit")


@register("dsplit")
def dsplit(input, sections):
    """Split along dim 2."""
    if input.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with {input.ndim} dimensions!")
    return _split(input, sections, 2, "dsplit")


@register("rot90")
def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (module docstring)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = wrap_dim(int(dims[0]), input.ndim), wrap_dim(int(dims[1]), input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    ops = _ops()
    k = int(k) % 4
    if k == 1:
        return ops.transpose(ops.flip(input, [d1]), d0, d1)
    if k == 2:
        return ops.flip(input, [d0, d1])
    if k == 3:
        return ops.flip(ops.transpose(input, d0, d1), [d1])
    return input * 1 if input.requires_grad else input.clone()


@register("block_diag")
def block_diag(*tensors) -> Tensor:
    """The tensors (0-d: 1x1, 1-d: one row) on the diagonal of a zero matrix."""
    ops = _ops()
    mats = [t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t for t in tensors]
    if any(m.ndim != 2 for m in mats):
        raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions")
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        rows.append(ops.pad(m, (left, cols - left - c)))
        left += c
    return ops.cat(rows, 0)


@register("cartesian_prod")
def cartesian_prod(*tensors) -> Tensor:
    """All combinations of one element of each 1-d tensor, as rows (1-d for one tensor)."""
    ops = _ops()
    if len(tensors) == 1:
        return tensors[0]
    grids = ops.meshgrid(*tensors, indexing="ij")
    return ops.stack([g.reshape(-1) for g in grids], 1)


@register("combinations")
def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of the elements of a 1-d tensor, as rows."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.size == 0:
        return input.new_zeros((0, r))
    return input[_wrap(idx)]


def _tri_indices(row, col, offset, lower, dtype, device):
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    from .creation import tensor

    return tensor(np.stack([rows, cols]).astype(np.int64), dtype=dtype or int64, device=device)


@register("tril_indices")
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """``(2, N)`` row and column indices of the lower triangle (diagonal ``offset``)."""
    check_factory_options("tril_indices", layout)
    return _tri_indices(row, col, offset, True, dtype, device)


@register("triu_indices")
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """``(2, N)`` row and column indices of the upper triangle (diagonal ``offset``)."""
    check_factory_options("triu_indices", layout)
    return _tri_indices(row, col, offset, False, dtype, device)


@register("unravel_index")
def unravel_index(indices, shape):
    """Flat indices -> a tuple of coordinate tensors for ``shape``."""
    raw = indices.array if isinstance(indices, Tensor) else np.asarray(indices)
    a = raw.get() if hasattr(raw, "get") else raw
    if a.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {a.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = int(np.prod(shape))
    if a.size and (a.min() < -total or a.max() >= total):
        raise RuntimeError(f"'indices' must be in range [-{total}, {total - 1}]")
    xp = get_array_module(raw)  # the coordinates live where the indices do
    return tuple(_wrap(xp.asarray(c.astype(np.int64))) for c in np.unravel_index(np.where(a < 0, a + total, a), shape))


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a ``Size``)."""
    from ..autograd import Size

    try:
        return Size(np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None
