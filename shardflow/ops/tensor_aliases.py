"""Tensor methods and top-level functions that are other ops under torch's names:

* ``isreal(input)``: ``imag == 0`` for complex dtypes, all True otherwise (bool tensor).
* ``is_neg(input)``: False — shardflow has no lazy negative-bit views (``resolve_neg`` is the
  identity), so no tensor carries torch's negation flag.
* ``adjoint(input)``: ``input.mH``, the conjugate transpose of the last two dims; torch's
  error for fewer than 2 dims.
* ``narrow_copy``: ``narrow(...).clone()`` (a copy, not a view).
* ``unsafe_chunk`` / ``unsafe_split`` / ``unsafe_split_with_sizes``: ``chunk`` / ``split`` /
  ``split_with_sizes``; torch's "unsafe" only skips its view-aliasing checks, which
  shardflow does not make, so the results and gradients are the same.
* ``Tensor.to_sparse_coo()``: ``to_sparse()`` (a COO tensor); a method only, as in torch.
"""

from __future__ import annotations

from ..autograd import Tensor
from ..autograd.dispatch import register
from .complex_ops import imag
from .conversion import clone
from .creation import ones_like
from .shape import chunk, narrow, split, split_with_sizes
from .sparse_coo import to_sparse

__all__ = ["isreal", "is_neg", "adjoint", "narrow_copy", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes"]


@register("isreal")
def isreal(input: Tensor) -> Tensor:
    """Elementwise: is the value real (imaginary part 0; every element of a real dtype)."""
    if not input.dtype.is_complex:
        return ones_like(input, dtype="bool")
    return imag(input) == 0


@register("is_neg")
def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view: never in shardflow."""
    return False


@register("adjoint")
def adjoint(input: Tensor) -> Tensor:
    """Conjugate transpose of the last two dims (a view for real dtypes, as ``mH``)."""
    if input.ndim < 2:
        raise RuntimeError(
            f"tensor.adjoint() is only supported on matrices or batches of matrices. Got {input.ndim}-D tensor."
        )
    return input.mH


@register("narrow_copy")
def narrow_copy(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``narrow(input, dim, start, length)`` as a new tensor (no memory shared)."""
    return clone(narrow(input, dim, start, length))


@register("unsafe_chunk")
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0):
    """``chunk(input, chunks, dim)``."""
    return chunk(input, chunks, dim)


@register("unsafe_split")
def unsafe_split(tensor: Tensor, split_size, dim: int = 0):
    """``split(tensor, split_size, dim)``."""
    return split(tensor, split_size, dim)


@register("unsafe_split_with_sizes")
def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    """``split_with_sizes(input, split_sizes, dim)``."""
    return split_with_sizes(input, split_sizes, dim)


@register("to_sparse_coo")
def to_sparse_coo(input: Tensor):
    """``Tensor.to_sparse_coo()``: ``to_sparse()`` (torch has no top-level form)."""
    return to_sparse(input)
