"""Which boxes of a logical tensor a rank holds, and how two boxes intersect.

A *box* is a rectangular region of a logical tensor: ``offsets`` and ``lengths`` per dim
(PyTorch DCP's ``ChunkStorageMetadata``). A rank's shard of a global tensor is the box
(or, for ``split(d, blocks=k)``, the union of boxes) that :func:`layout.local_index` selects;
a plain (local) tensor is one box covering the whole tensor. :func:`local_boxes` returns each
box together with where it sits in the rank's local array, so the same arithmetic serves
saving (cut pieces out of the shard) and loading (paste pieces into the shard).

Partial mesh dimensions: a rank of a ``P`` dimension holds a summand, not a box; the saver
boxes ``P`` to ``B`` before it computes boxes, the loader gives coordinate 0 of the ``P``
dimension the whole value and zeros to the others (the ``B -> P`` boxing, no
communication).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .. import layout
from ..sbp import broadcast

__all__ = ["Box", "local_boxes", "intersect", "runs", "spec_of", "partial_zero"]


@dataclass(frozen=True)
class Box:
    """A region ``[offsets, offsets + lengths)`` of a logical tensor, and where it lies in
    the local array (``local`` = the start of the region in the rank's shard, per dim)."""

    offsets: tuple[int, ...]
    lengths: tuple[int, ...]
    local: tuple[int, ...]

    @property
    def numel(self) -> int:
        return int(np.prod(self.lengths, dtype=np.int64))

    def local_slices(self, lo=None, hi=None) -> tuple[slice, ...]:
        """Slices of the local array that hold logical region ``[lo, hi)`` (default: the box)."""
        lo = self.offsets if lo is None else lo
        hi = tuple(o + n for o, n in zip(self.offsets, self.lengths)) if hi is None else hi
        return tuple(slice(l0 + a - o, l0 + b - o)
                     for l0, a, b, o in zip(self.local, lo, hi, self.offsets))


def runs(ix, size: int) -> list[tuple[int, int, int]]:
    """``(logical_start, length, local_start)`` of each run of consecutive positions in the
    index ``ix`` (a slice or an int array) of a dim of ``size``."""
    if isinstance(ix, slice):
        lo, hi, step = ix.indices(size)
        assert step == 1
        return [(lo, hi - lo, 0)] if hi > lo else []
    arr = np.asarray(ix, dtype=np.int64)
    if arr.size == 0:
        return []
    breaks = np.nonzero(np.diff(arr) != 1)[0] + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [arr.size]])
    return [(int(arr[s]), int(e - s), int(s)) for s, e in zip(starts, ends)]


def spec_of(t):
    """The tensor's :class:`GlobalSpec`, or None for a plain tensor / NumPy array."""
    return getattr(t, "_spec", None)


def _index_for(spec) -> tuple:
    p = spec.placement
    sbp = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
    return layout.local_index(spec.shape, p.shape, p.coordinate, sbp)


def local_boxes(shape, spec=None) -> list[Box]:
    """The boxes of a tensor of logical ``shape`` held by this rank (``spec`` None: all of it).

    Boxes with no elements are left out, except that a tensor with no elements at all is
    still one (empty) box, so it gets saved and loaded."""
    shape = tuple(int(s) for s in shape)
    if spec is None:
        return [Box((0,) * len(shape), shape, (0,) * len(shape))]
    index = _index_for(spec)
    per_dim = [runs(ix, n) for ix, n in zip(index, shape)]
    out = []
    for combo in itertools.product(*per_dim):
        box = Box(tuple(c[0] for c in combo), tuple(c[1] for c in combo),
                  tuple(c[2] for c in combo))
        if box.numel:
            out.append(box)
    return out


def partial_zero(spec) -> bool:
    """True when this rank's part of a ``P`` target is zeros (not coordinate 0 of a P dim)."""
    if spec is None:
        return False
    return any(s.is_partial() and c != 0
               for s, c in zip(spec.sbp, spec.placement.coordinate))


def intersect(a_off, a_len, b_off, b_len):
    """``(lo, hi)`` of the intersection of two boxes, or None when they do not overlap."""
    lo = tuple(max(x, y) for x, y in zip(a_off, b_off))
    hi = tuple(min(x + m, y + n) for x, m, y, n in zip(a_off, a_len, b_off, b_len))
    if any(h <= lo_ for lo_, h in zip(lo, hi)):
        return None
    return lo, hi
