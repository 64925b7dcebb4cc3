"""Helpers for ``backward_graph`` (higher-order gradients, autograd/higher_order.py): the
array helpers of the ``backward`` methods rewritten with differentiable Tensor ops, so a
gradient computed with them can be differentiated again. Ops reach them by name through
``dispatch.OPS`` (no import upward, no per-op cost: only the create_graph pass calls them).
"""

from __future__ import annotations

from ..autograd import Function, Tensor, _wrap
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


def const(array, like: Tensor | None = None) -> Tensor:
    """A constant Tensor (no graph) of ``array`` — in ``like``'s dtype when given: a
    piecewise-constant coefficient (a mask, a sign, a dropout mask, a one-hot target table,
    running statistics) whose derivative is zero."""
    if like is None:
        return _wrap(array)
    dtype = like.array.dtype
    return _wrap(array if getattr(array, "dtype", None) == dtype else array.astype(dtype))


def keep_where(g: Tensor, cond) -> Tensor:
    """``g`` where the boolean array ``cond`` holds, else 0 (an inf/NaN ``g`` at a dropped
    position gives 0, as the first-order ``_grad_where``): linear in ``g``."""
    return OPS["where"](_wrap(cond), g, 0.0)


def sum_to(t: Tensor, shape) -> Tensor:
    """``t`` summed down to ``shape``, which broadcasts to ``t.shape`` (the Tensor form of
    ``_util.unbroadcast``)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = t.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + k for k, n in enumerate(shape) if n == 1 and t.shape[lead + k] != 1
    )
    if axes:
        t = t.sum(dim=axes, keepdim=True)
    return t.reshape(shape)


def sum_to_shape(t: Tensor, shape) -> Tensor:
    """``t`` summed down to ``shape``, which may carry leading 1s beyond ``t.ndim`` (the
    Tensor form of index.py's ``_reduce_to``: a broadcast value's gradient)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    stripped = shape
    while len(stripped) > t.ndim and stripped[0] == 1:
        stripped = stripped[1:]
    return sum_to(t, stripped).reshape(shape)


class _Adjoint(Function):
    """The input gradient of a *linear* one-input op ``L`` (slice, pad, diagonal, gather...):
    forward is ``L``'s own array backward (``L^T g``); being linear in ``g``, its derivative
    is ``L`` itself, applied by ``apply_op`` (``L`` as a differentiable Tensor op, e.g.
    ``lambda t: t[idx]``), so gradients of any order follow."""

    save_inputs = ()

    def forward(self, g, node=None, apply_op=None):
        self.apply_op = apply_op  # the node itself is not kept: it may be released
        out = node.backward(g)
        return out[0] if isinstance(out, tuple) else out

    def backward(self, gg):
        return self.apply_op(_wrap(gg)).array

    def backward_graph(self, gg):
        return self.apply_op(gg)


def adjoint(node: Function, g: Tensor, apply_op) -> Tensor:
    """``node.backward(g)`` for a linear one-input op as a differentiable Tensor (see
    _Adjoint); ``apply_op(t)`` applies the op itself to a Tensor."""
    return _Adjoint.apply(g, node=node, apply_op=apply_op)


# Linear gradients whose op has a ``linear_forward`` (pooling, embedding): the op as a
# linear map of its input with the geometry saved in forward. ``AdjointOf`` runs the node's
# array ``backward`` (L^T g) and ``ForwardOf`` its ``linear_forward`` (L h); each is the
# other's ``backward_graph``, so any order of derivative works with the two array kernels the
# op already has. The pair keeps its own copy of the node's saved state (``_snapshot``), so it
# outlives the node's ``release``.


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
