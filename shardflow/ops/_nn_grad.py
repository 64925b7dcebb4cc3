"""Helpers for the ``backward_graph`` methods of the neural-network ops (conv, pool,
normalization, softmax, loss, dropout, embedding, attention): the differentiable gradients
that ``backward(create_graph=True)`` / ``autograd.grad(create_graph=True)`` use
(docs/COMPAT.md, "Higher-order gradients").

* ``const(array)``: a constant Tensor (no gradient) for a saved non-differentiable value —
  a mask, a dropout mask, a one-hot target table, running statistics.
* ``sum_to(t, shape)``: the differentiable reverse of broadcasting (``_util.unbroadcast``
  on Tensors).
* ``linear_adjoint(node, g)``: the input gradient of a node whose backward is linear in the
  output gradient and reads no differentiable input — pooling (the window positions, arg-max
  indices and divisors are fixed), embedding (the ids are fixed). The gradient is a node
  ``AdjointOf`` whose forward runs the node's own array ``backward`` and whose backward runs
  the node's ``linear_forward`` (the op as a linear map of its input, with the geometry saved
  in forward: the transpose of the transpose); ``ForwardOf`` is that map as a node, whose
  backward is the array ``backward`` again. Each is the other's ``backward_graph``, so any
  order of derivative works with two array kernels the op already has. The pair keeps its
  own copy of the node's saved state (``_snapshot``), so it outlives the node's ``release``.
"""

from __future__ import annotations

from ..autograd import Function, Tensor, _wrap


def const(array) -> Tensor:
    """``array`` as a Tensor that needs no gradient."""
    return _wrap(array)


def sum_to(t: Tensor, shape) -> Tensor:
    """``t`` summed down to ``shape`` (the reverse of broadcasting), differentiably."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = t.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and t.shape[lead + i] != 1)
    if dims:
        t = t.sum(dim=dims, keepdim=True)
    return t.reshape(shape)


def _snapshot(node: Function) -> Function:
    """A detached copy of ``node``'s saved state that calling its ``backward`` /
    ``linear_forward`` needs (``release`` clears the original's ``__dict__``)."""
    clone = object.__new__(type(node))
    clone.__dict__.update(node.__dict__)
    clone.needs_input_grad = node.needs_input_grad
    return clone


def _first(out):
    return out[0] if type(out) is tuple else out


class AdjointOf(Function):
    """``node.backward(g)`` (a gradient linear in ``g``) as a differentiable node."""

    save_inputs = ()

    def forward(self, g, *, node):
        self.node = node
        return _first(node.backward(g))

    def backward(self, h):
        return self.node.linear_forward(h)

    def backward_graph(self, h):
        return ForwardOf.apply(h, node=self.node)


class ForwardOf(Function):
    """``node.linear_forward(h)``: the op as a linear map with its saved geometry."""

    save_inputs = ()

    def forward(self, h, *, node):
        self.node = node
        return node.linear_forward(h)

    def backward(self, g):
        return _first(self.node.backward(g))

    def backward_graph(self, g):
        return AdjointOf.apply(g, node=self.node)


def linear_adjoint(node: Function, g: Tensor) -> Tensor:
    """The input gradient of ``node`` for the output gradient ``g`` (see the module
    docstring), differentiable in ``g`` to any order."""
    return AdjointOf.apply(g, node=_snapshot(node))
