"""Diagonal builders: ``diag_embed``, ``diag``, ``diagflat`` (``diagonal``, the reader, is in
``shape.py``).

``diag_embed(x, offset, dim1, dim2)`` puts the last dim of ``x`` (length ``k``) on the
``offset``-th diagonal of new ``(n, n)`` planes, ``n = k + |offset|``, placed at output dims
``dim1`` and ``dim2``; everything off that diagonal is zero. It writes ``x`` into a zero
``(*batch, n, n)`` array at rows ``i + max(-offset, 0)``, columns ``i + max(offset, 0)``, then
moves the two plane dims into place; backward reads the same positions of the gradient.
``diag`` of a vector is ``diag_embed`` (a matrix), of a matrix its ``diagonal`` (a vector);
``diagflat`` embeds the flattened input.
"""

from __future__ import annotations

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from ._grad_graph import linear_adjoint
from ._util import wrap_dim
from .shape import diagonal, reshape

__all__ = ["diag_embed", "diag", "diagflat"]


def _diag_positions(xp, k: int, offset: int):
    i = xp.arange(k)
    return i + max(-offset, 0), i + max(offset, 0)


class DiagEmbed(Function):
    save_inputs = ()

    def forward(self, x, offset=0, dim1=-2, dim2=-1):
        k = x.shape[-1]
        n = k + abs(offset)
        self.offset, self.dims, self.k, self.n = offset, (dim1, dim2), k, n
        return self.linear_forward(x)

    def linear_forward(self, x):
        """``x`` embedded on the saved diagonal (also the adjoint of ``backward``)."""
        xp = get_array_module(x)
        out = xp.zeros(x.shape[:-1] + (self.n, self.n), x.dtype)
        rows, cols = _diag_positions(xp, self.k, self.offset)
        out[..., rows, cols] = x
        return xp.moveaxis(out, (-2, -1), self.dims)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear in g (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        planes = xp.moveaxis(g, self.dims, (-2, -1))
        rows, cols = _diag_positions(xp, self.k, self.offset)
        return xp.ascontiguousarray(planes[..., rows, cols])


@register("diag_embed")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims ``dim1``, ``dim2``) whose ``offset``-th diagonals are ``input``'s last dim."""
    nd = input.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input.ndim == 0:
        raise RuntimeError("diag_embed(): input must have at least 1 dimension")
    return DiagEmbed.apply(input, offset=int(offset), dim1=d1, dim2=d2)


@register("diag")
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector -> the square matrix with it on diagonal ``diagonal``; a matrix -> that diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:  # a copy, as torch's (a view let `d = m.diag(); d += 1` change m)
        return _diagonal(input, diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


_diagonal = diagonal  # the reader, under diag()'s parameter name


@register("diagflat")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened ``input`` on diagonal ``offset`` of a square matrix."""
    return diag_embed(reshape(input, (-1,)), offset)
