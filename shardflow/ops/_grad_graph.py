"""Helpers for ``backward_graph`` (higher-order gradients, autograd/higher_order.py): the
array helpers of the ``backward`` methods rewritten with differentiable Tensor ops, so a
gradient computed with them can be differentiated again. Ops reach them by name through
``dispatch.OPS`` (no import upward, no per-op cost: only the create_graph pass calls them).
"""

from __future__ import annotations

from ..autograd import Tensor
from ..autograd.dispatch import OPS


def op(name: str):
    """The registered functional form of op ``name`` (looked up at call time, see dispatch)."""
    return OPS[name]


def conj(t):
    """``t`` conjugated when complex (PyTorch's gradients use conj(other) for complex)."""
    if isinstance(t, Tensor) and t.array.dtype.kind == "c":
        return OPS["conj"](t)
    if isinstance(t, complex):
        return t.conjugate()
    return t


def keepdim_shape(shape, dims) -> tuple:
    """``shape`` with the reduced ``dims`` (all when None) kept as size 1."""
    if dims is None:
        return (1,) * len(shape)
    dims = {d % len(shape) for d in ((dims,) if isinstance(dims, int) else dims)} if shape else set()
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def unreduce(g: Tensor, shape, dims, keepdim) -> Tensor:
    """A reduced gradient (or value) with the reduced dims back as size 1 (keepdim form)."""
    if keepdim:
        return g
    return g.reshape(keepdim_shape(shape, dims))


def expand_reduced(g: Tensor, shape, dims, keepdim) -> Tensor:
    """A reduction's gradient ``g`` broadcast back to the input ``shape`` (differentiable)."""
    g = unreduce(g, shape, dims, keepdim)
    return g.expand(*shape) if tuple(g.shape) != tuple(shape) else g
