"""``torch.autograd.forward_ad``: dual tensors (``dual_level``, ``make_dual``, ``unpack_dual``).

shardflow has no forward-mode kernels; the tangent of a result is computed when it is asked
for (``unpack_dual``), from reverse mode, with the double-vjp trick. For ``y = f(x)`` with
tangents ``v`` on the dual inputs ``x``:

1. ``g(u) = J^T u`` (one ``autograd.grad`` of ``y`` with a seed ``u`` that requires grad,
   ``create_graph=True``: every op's ``backward_graph`` records it as a graph in ``u``);
2. ``s(u) = sum_i <g_i(u), v_i>`` is linear in ``u`` with gradient ``J v``: a second
   ``autograd.grad`` (of ``s`` with respect to ``u``) gives the tangent of ``y``.

So a tangent costs two backward passes over the graph from the dual inputs to ``y`` (torch
computes tangents op by op as the forward runs: much cheaper, and without keeping a graph).
Consequences, documented in docs/COMPAT.md:

* ``make_dual`` returns a Tensor that records a graph (``requires_grad=True``, linked to the
  primal's history when the primal has one), so results computed from it require grad, where
  torch's dual tensors do not;
* an op on the path without a second derivative (``backward_graph``) makes ``unpack_dual``
  raise, naming the op; the graph is kept while the level is open (tangents can be read from
  several results), and the level's duals are forgotten when it closes;
* one level at a time (torch allows nested levels; ``enter_dual_level`` inside one raises).

A custom ``autograd.Function`` that defines ``jvp`` and no ``backward``/``vjp`` (torch's
forward-mode-only Function) has no reverse formula for the trick to use: inside a level, when
an input has a tangent, its ``jvp(ctx, *input_tangents)`` runs right after ``forward`` (as in
torch; inputs without a tangent get zeros, non-Tensor inputs None) and each floating output
becomes a dual tensor with the tangent ``jvp`` returned (:func:`_through_user_jvp`). Such an
output has no reverse path to the Function's inputs; ``backward`` through it raises torch's
"You must implement either the backward or vjp method" error. A Function with ``backward``
keeps the double-vjp route (its ``jvp`` is not called; the tangent is the same when the two
formulas agree, which ``gradcheck(check_forward_ad=True)`` checks).
"""

from __future__ import annotations

from typing import NamedTuple

from ..backend import get_array_module
from .function import Function
from .tensor import Tensor, _wrap

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual"]

# the open level: [level number or None, {id(dual): (dual, tangent)}]
_level: list = [None, {}]
# > 0 while unpack_dual's two backward passes run: a forward-only Function's dual lets them
# through (its tangent is already known; what reaches past it goes to a leaf nobody reads)
_unpacking: list = [0]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and its tangent (None when it has none)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Open a forward-AD level (torch's function; ``dual_level`` is the context manager)."""
    if _level[0] is not None:
        raise RuntimeError(
            "Entering a new forward AD level but the current level is not valid. Make sure "
            "you did not modified it directly. (shardflow supports one dual level at a time: "
            "exit the current one first)"
        )
    _level[0] = 0
    _level[1] = {}
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: its dual tensors lose their tangents."""
    if _level[0] is None or (level is not None and level != _level[0]):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    _level[0] = None
    _level[1] = {}


class dual_level:
    """``with dual_level():`` — the scope inside which dual tensors have tangents."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


class _Dual(Function):
    """The identity, as a node: a dual tensor is this node's output, so the graph of what is
    computed from it starts here (the tangent is attached to it)."""

    save_inputs = ()

    def forward(self, a):
        return a.view()

    def backward(self, g):
        return g

    def backward_graph(self, g):
        return g


class _ForwardOnlyDual(_Dual):
    """The dual made from a forward-mode-only custom Function's output: the Function has no
    reverse formula, so reverse mode through it raises torch's error."""

    def forward(self, a, fn_name: str = "Function"):
        self._fn_name = fn_name
        return a.view()

    def backward(self, g):
        if not _unpacking[0]:
            self._refuse()
        return g

    def backward_graph(self, g):
        if not _unpacking[0]:
            self._refuse()
        return g

    def _refuse(self):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it "
            f"with backward mode AD. ({self._fn_name} defines only jvp: add @staticmethod def backward(ctx, "
            "*grad_outputs))")


def _through_user_jvp(cls, ctx, args: tuple, result):
    """``result`` (the outputs of ``cls.apply(*args)``) as dual tensors carrying the tangents
    of ``cls.jvp(ctx, *tangents)`` (module docstring); ``result`` itself when no input has a
    tangent at the open level."""
    from .grad_mode import no_grad

    tangents, any_tangent = [], False
    for a in args:
        if not isinstance(a, Tensor):
            tangents.append(None)
            continue
        t = unpack_dual(a).tangent
        any_tangent = any_tangent or t is not None
        tangents.append(t if t is not None else _wrap(get_array_module(a.array).zeros_like(a.array)))
    if not any_tangent:
        return result
    with no_grad():
        out_tangents = cls.jvp(ctx, *tangents)
    outs = result if isinstance(result, tuple) else (result,)
    out_tangents = out_tangents if isinstance(out_tangents, tuple) else (out_tangents,)
    if len(out_tangents) != len(outs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(out_tangents)} tangents, but forward returned "
                           f"{len(outs)} outputs (fix: return one tangent, or None, per output)")
    duals = []
    for o, t in zip(outs, out_tangents):
        if isinstance(o, Tensor) and t is not None and (o.is_floating_point() or o.is_complex()):
            if tuple(t.shape) != tuple(o.shape):
                raise RuntimeError(f"{cls.__name__}.jvp returned a tangent of shape {list(t.shape)} for an "
                                   f"output of shape {list(o.shape)} (fix: one tangent of each output's shape)")
            dual = _ForwardOnlyDual.apply(_wrap(o.array, True), fn_name=cls.__name__)
            _level[1][id(dual)] = (dual, _tangent_like(o, t))
            duals.append(dual)
        else:
            duals.append(o)
    return tuple(duals) if isinstance(result, tuple) else duals[0]


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A Tensor with ``tensor``'s values whose results carry a tangent (module docstring)."""
    if _level[0] is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if not tensor.is_floating_point() and not tensor.is_complex():
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype} "
            "(fix: convert it with .float() first)"
        )
    source = tensor if tensor.requires_grad else _wrap(tensor.array, True)
    dual = _Dual.apply(source)
    _level[1][id(dual)] = (dual, _tangent_like(tensor, tangent))
    return dual


def _storage_numel(t: Tensor) -> int:
    return t.untyped_storage().nbytes() // t.element_size()


def _tangent_like(tensor: Tensor, tangent: Tensor) -> Tensor:
    """torch's rule: a tangent laid out as the primal (same strides, offset and storage size
    in elements) is kept as it is (``unpack_dual(d).tangent is tangent``; later in-place
    changes to it show); any other is copied into a new tensor of the primal's dtype.
    (shardflow's new tensors are row-major, so that copy is contiguous where torch's takes
    a non-contiguous primal's strides.)"""
    if (tangent.stride() == tensor.stride() and tangent.storage_offset() == tensor.storage_offset()
            and _storage_numel(tangent) == _storage_numel(tensor)):
        return tangent
    array = tangent.detach().array
    return _wrap(get_array_module(array).array(array, dtype=tensor.array.dtype, order="C", copy=True))


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: the tangent by the double-vjp trick (module
    docstring), None when ``tensor`` does not depend on a dual tensor of the open level."""

    duals = list(_level[1].values()) if _level[0] is not None else []
    own = _level[1].get(id(tensor)) if _level[0] is not None else None
    if own is not None and own[0] is tensor:
        return UnpackedDualTensor(tensor, own[1])
    if not duals or not isinstance(tensor, Tensor) or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    _unpacking[0] += 1
    try:
        return _tangent_by_double_vjp(tensor, duals)
    finally:
        _unpacking[0] -= 1


def _tangent_by_double_vjp(tensor: Tensor, duals: list) -> UnpackedDualTensor:
    from .api import grad

    inputs = [d for d, _ in duals]
    zeros = get_array_module(tensor.array).zeros_like(tensor.array)
    u = _wrap(zeros, True)  # the seed the first vjp is linear in
    vjps = grad(tensor, inputs, u, retain_graph=True, create_graph=True, allow_unused=True)
    total = None
    for g, (_, v) in zip(vjps, duals):
        if g is None:
            continue
        term = (g * v).sum()
        total = term if total is None else total + term
    if total is None:  # no dual input reaches the tensor
        return UnpackedDualTensor(tensor, None)
    if not total.requires_grad:  # the vjp does not depend on u: a zero Jacobian
        return UnpackedDualTensor(tensor, _wrap(zeros.copy()))
    (jv,) = grad(total, [u], allow_unused=True, materialize_grads=True)
    return UnpackedDualTensor(tensor, jv.detach())
