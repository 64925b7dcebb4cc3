"""Unique elements: ``unique`` and ``unique_consecutive`` (PyTorch's signatures).

* ``unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None)``: the
  distinct elements of the flattened input (``dim=None``) or the distinct slices along
  ``dim``, with optionally the inverse indices (``output[inverse]`` rebuilds the input: shape
  of the input for ``dim=None``, ``(input.size(dim),)`` otherwise) and the counts, both
  int64. The result is always sorted: ``sorted=False`` leaves the order to the
  implementation in PyTorch, and ascending order is a valid answer (CUDA PyTorch sorts
  too). Computed by the array module's ``unique`` (NumPy or CuPy).
* ``unique_consecutive``: collapses runs of equal consecutive elements (or slices along
  ``dim``), keeping their order; inverse indices and run lengths as above.
* Neither is differentiable (PyTorch has no derivative for them either): the results never
  require grad.
"""

from __future__ import annotations

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend.xp import get_array_module
from ._util import wrap_dim

__all__ = ["unique", "unique_consecutive"]


def _results(values, inverse, counts, return_inverse: bool, return_counts: bool):
    out = [_wrap(values)]
    if return_inverse:
        out.append(_wrap(inverse.astype("int64", copy=False)))
    if return_counts:
        out.append(_wrap(counts.astype("int64", copy=False)))
    return out[0] if len(out) == 1 else tuple(out)


@register("unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None):
    """The distinct elements (or slices along ``dim``), sorted; see the module docstring."""
    a = input.array
    xp = get_array_module(a)
    if dim is None:
        values, inverse, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        return _results(values, inverse.reshape(a.shape), counts, return_inverse, return_counts)
    d = wrap_dim(int(dim), a.ndim)
    values, inverse, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=d)
    return _results(values, inverse.reshape(-1), counts, return_inverse, return_counts)


@register("unique_consecutive")
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Runs of equal consecutive elements (or slices along ``dim``) collapsed to one."""
    a = input.array
    xp = get_array_module(a)
    if dim is None:
        flat = a.reshape(-1)
        starts = xp.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values, shape = flat[starts], a.shape
    else:
        d = wrap_dim(int(dim), a.ndim)
        moved = xp.moveaxis(a, d, 0)
        starts = xp.ones(moved.shape[0], dtype=bool)
        if moved.shape[0] > 1:
            starts[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        values, shape = xp.moveaxis(moved[starts], 0, d), (moved.shape[0],)
    inverse = (xp.cumsum(starts) - 1).reshape(shape)
    counts = xp.diff(xp.append(xp.flatnonzero(starts), starts.shape[0]))
    return _results(values, inverse, counts, return_inverse, return_counts)
