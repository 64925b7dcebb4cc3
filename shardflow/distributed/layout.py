"""Which part of a logical tensor each rank holds: the index arithmetic behind sbp.

Uneven splits follow ``torch.chunk``: a dimension of size ``L`` over ``n`` ranks is cut in
chunks of ``ceil(L / n)``; the last chunks may be shorter or empty. On an N-d mesh the
splits nest in mesh order: mesh dimension 0 cuts first, mesh dimension 1 cuts each of
those chunks again (OneFlow's 2-D sbp). ``split(d, blocks=k)`` chunks each of ``k`` equal
blocks of ``d`` and concatenates this rank's chunks.
"""

from __future__ import annotations

import numpy as np

from ..backend.xp import get_array_module
from .sbp import Split

__all__ = ["chunk_bounds", "piece", "local_index", "local_shape", "level_size", "validate"]


def chunk_bounds(size: int, n: int, i: int) -> tuple[int, int]:
    """``[lo, hi)`` of chunk ``i`` when ``size`` is cut into ``n`` with torch.chunk's rule."""
    c = -(-size // n) if size else 0
    lo = min(i * c, size)
    return lo, min(lo + c, size)


def piece(size: int, n: int, i: int, blocks: int = 1):
    """Positions (a slice, or an index array when ``blocks > 1``) held by member ``i``."""
    if blocks == 1:
        lo, hi = chunk_bounds(size, n, i)
        return slice(lo, hi)
    m = size // blocks
    lo, hi = chunk_bounds(m, n, i)
    return np.concatenate([np.arange(j * m + lo, j * m + hi) for j in range(blocks)])


def piece_len(size: int, n: int, i: int, blocks: int = 1) -> int:
    if blocks == 1:
        lo, hi = chunk_bounds(size, n, i)
        return hi - lo
    lo, hi = chunk_bounds(size // blocks, n, i)
    return (hi - lo) * blocks


def level_size(shape, mesh_shape, coord, sbp, dim: int, level: int) -> int:
    """Size of tensor dim ``dim`` after the splits of mesh dimensions ``< level``."""
    size = shape[dim]
    for k in range(level):
        s = sbp[k]
        if s.is_split() and s.dim == dim:
            size = piece_len(size, mesh_shape[k], coord[k], s.blocks)
    return size


def local_shape(shape, mesh_shape, coord, sbp) -> tuple[int, ...]:
    out = list(shape)
    for k, s in enumerate(sbp):
        if s.is_split():
            out[s.dim] = piece_len(out[s.dim], mesh_shape[k], coord[k], s.blocks)
    return tuple(out)


def local_index(shape, mesh_shape, coord, sbp) -> tuple:
    """An index into the logical tensor that selects this rank's shard."""
    idx: list = [slice(None)] * len(shape)
    for k, s in enumerate(sbp):
        if not s.is_split():
            continue
        d = s.dim
        cur = idx[d]
        cur_arr = np.arange(shape[d])[cur]
        sel = piece(len(cur_arr), mesh_shape[k], coord[k], s.blocks)
        chosen = cur_arr[sel]
        if chosen.size and np.all(np.diff(chosen) == 1):
            idx[d] = slice(int(chosen[0]), int(chosen[-1]) + 1)
        elif chosen.size == 0:
            idx[d] = slice(0, 0)
        else:
            idx[d] = chosen
    return tuple(idx)


def take(array, index):
    """Apply a :func:`local_index` (slices and at most a few index arrays) to ``array``."""
    out = array
    for d, ix in enumerate(index):
        if isinstance(ix, slice):
            if ix != slice(None):
                out = out[(slice(None),) * d + (ix,)]
        else:
            # The index array is made on the host; a device array takes it on its device.
            out = out.take(get_array_module(out).asarray(ix), axis=d)
    return out


def validate(shape, mesh_shape, sbp, what: str = "tensor") -> None:
    """Raise a clear error when ``sbp`` cannot lay ``shape`` over a mesh of ``mesh_shape``."""
    ndim = len(shape)
    for k, s in enumerate(sbp):
        if not s.is_split():
            continue
        if not -max(ndim, 1) <= s.dim < max(ndim, 1) or ndim == 0:
            raise ValueError(
                f"{what}: sbp {s} on mesh dimension {k} splits dim {s.dim}, but the tensor has "
                f"{ndim} dimension(s) (shape {tuple(shape)}); split a dim in [0, {ndim - 1}] or "
                "use sbp.broadcast"
            )
    for k, s in enumerate(sbp):
        if not s.is_split():
            continue
        size = level_size(shape, mesh_shape, [0] * len(mesh_shape), sbp, s.dim, k)
        n = mesh_shape[k]
        if size % s.blocks:
            raise ValueError(
                f"{what}: sbp {s} needs dim {s.dim} (size {size}) to divide into {s.blocks} "
                "equal blocks"
            )
        if size // s.blocks < n:
            raise ValueError(
                f"{what}: cannot split dim {s.dim} of size {size // s.blocks} over {n} ranks "
                f"(mesh dimension {k}); the dimension must be at least as large as the mesh. "
                "Use sbp.broadcast for it or a smaller mesh"
            )


def normalize_dim_sbp(sbp, ndim: int):
    """Split dims made non-negative (``split(-1)`` -> ``split(ndim - 1)``)."""
    out = []
    for s in sbp:
        if s.is_split() and s.dim < 0:
            s = Split(s.dim + ndim, s.blocks)
        out.append(s)
    return tuple(out)
