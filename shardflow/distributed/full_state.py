"""Whole-tensor state of a model and optimizer laid out as global tensors (for checkpoints).

A checkpoint written by a tensor-parallel run holds the same whole tensors as one written
by one process, so it resumes on any layout (and loads into a plain model):

* :func:`full_state_dict` gathers each global parameter/buffer to a whole local tensor;
* :func:`full_optimizer_state_dict` does the same for optimizer state tensors: global ones
  (the optimizers lay a global parameter's state out like it), and plain ones of the shape
  of their parameter's shard (state made by older code); a scalar ``step`` is left alone;
* :func:`shard_optimizer_state` is the inverse after loading: state tensors with the whole
  shape of a global parameter keep this rank's shard, laid out like the parameter
  (:func:`lay_out_like`).

Communication: one S->B boxing (all_gather) per split tensor; broadcast ones are copied. Every
rank must call the gathering functions (they are collectives); only one needs to write.
"""

from __future__ import annotations

from ..autograd import Tensor, _wrap
from ..backend.xp import get_array_module
from . import layout
from .boxing import box_array
from .sbp import broadcast

__all__ = ["full_state_dict", "full_optimizer_state_dict", "shard_optimizer_state", "lay_out_like"]


def _full_array(arr, spec):
    return box_array(arr, spec.placement, spec.shape, spec.sbp,
                     (broadcast,) * spec.placement.ndim, "checkpoint")


def _full_copy(arr, spec):
    """A copy of the whole tensor, on the shard's device (as ``state_dict`` keeps devices)."""
    return get_array_module(arr).array(_full_array(arr, spec), copy=True)


def full_state_dict(module) -> dict:
    """``module.state_dict()`` with every global tensor gathered whole (a collective)."""
    out = {}
    for k, v in module.state_dict().items():
        if isinstance(v, Tensor) and v._spec is not None:
            v = _wrap(_full_copy(v.array, v._spec))
        out[k] = v
    return out


def params_by_index(optimizer) -> list:
    """The parameters in ``optimizer.state_dict()``'s index order: the groups' lists
    concatenated (the optimizer refuses a parameter listed twice, so index ``i`` is the
    ``i``-th of them)."""
    return [p for g in optimizer.param_groups for p in g["params"]]


def full_optimizer_state_dict(optimizer) -> dict:
    """``optimizer.state_dict()`` with each global parameter's state tensors gathered whole."""
    sd = optimizer.state_dict()
    params = params_by_index(optimizer)
    state = {}
    for i, st in sd["state"].items():
        p = params[i] if isinstance(i, int) and i < len(params) else None
        spec = None if p is None else p._spec
        state[i] = {k: _whole(v, spec, None if p is None else p.array.shape)
                    for k, v in st.items()} if isinstance(st, dict) else st
    return {"state": state, "param_groups": sd["param_groups"]}


def _whole(v, pspec, plocal):
    """A whole local copy of state tensor ``v``: by its own layout if global; by its
    parameter's (``pspec``) if it is a plain tensor of the parameter's shard shape."""
    if not isinstance(v, Tensor) or not v.array.ndim:
        return v
    if v._spec is not None:
        return _wrap(_full_copy(v.array, v._spec))
    if pspec is not None and tuple(v.array.shape) == tuple(plocal):
        return _wrap(_full_copy(v.array, pspec))
    return v


def lay_out_like(p, value):
    """``value``, a plain tensor of global parameter ``p``'s whole shape, as a global tensor
    laid out like ``p`` (a copy of this rank's shard; no communication). Anything else
    (``p`` local, ``value`` global, scalar or of another shape) is returned unchanged."""
    spec = getattr(p, "_spec", None)
    if (spec is None or not isinstance(value, Tensor) or value._spec is not None
            or not value.array.ndim or tuple(value.array.shape) != tuple(spec.shape)):
        return value
    if any(s.is_partial() for s in spec.sbp):
        raise NotImplementedError("optimizer state of a partial-sum parameter")
    index = layout.local_index(spec.shape, spec.placement.shape, spec.placement.coordinate, spec.sbp)
    xp = get_array_module(value.array)
    t = _wrap(xp.array(layout.take(value.array, index), copy=True))
    t._spec = spec
    return t


def shard_optimizer_state(optimizer) -> None:
    """Keep this rank's shard of every state tensor that has a global parameter's whole
    shape (a plain tensor, e.g. loaded before ``fully_shard``), laid out like the parameter."""
    for p, st in optimizer.state.items():
        if getattr(p, "_spec", None) is None or not isinstance(st, dict):
            continue
        for k, v in list(st.items()):
            st[k] = lay_out_like(p, v)
