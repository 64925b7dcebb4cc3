"""Whole-tensor state of a model and optimizer laid out as global tensors (for checkpoints).

A checkpoint written by a tensor-parallel run holds the same whole tensors as one written
by one process, so it resumes on any layout (and loads into a plain model):

* :func:`full_state_dict` gathers each global parameter/buffer to a whole local tensor;
* :func:`full_optimizer_state_dict` does the same for optimizer state tensors that have the
  shape of their parameter's shard (Adam's moments; a scalar ``step`` is left alone);
* :func:`shard_optimizer_state` is the inverse after loading: state tensors with the whole
  shape of a global parameter keep this rank's shard.

Communication: one S->B boxing (all_gather) per split tensor; broadcast ones are copied. Every
rank must call the gathering functions (they are collectives); only one needs to write.
"""

from __future__ import annotations

from ..autograd import Tensor, _wrap
from ..backend.xp import get_array_module
from . import layout
from .boxing import box_array
from .sbp import broadcast

__all__ = ["full_state_dict", "full_optimizer_state_dict", "shard_optimizer_state"]


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
        if spec is None:
            state[i] = st
            continue
        local = tuple(p.array.shape)
        state[i] = {
            k: (_wrap(_full_copy(v.array, spec))
                if isinstance(v, Tensor) and tuple(v.array.shape) == local and v.array.ndim else v)
            for k, v in st.items()
        }
    return {"state": state, "param_groups": sd["param_groups"]}


def shard_optimizer_state(optimizer) -> None:
    """Keep this rank's shard of every state tensor that has a global parameter's whole shape."""
    for p, st in optimizer.state.items():
        spec = getattr(p, "_spec", None)
        if spec is None or not isinstance(st, dict):
            continue
        index = layout.local_index(spec.shape, spec.placement.shape, spec.placement.coordinate, spec.sbp)
        for k, v in list(st.items()):
            if isinstance(v, Tensor) and tuple(v.array.shape) == tuple(spec.shape) and v.array.ndim:
                if any(s.is_partial() for s in spec.sbp):
                    raise NotImplementedError("optimizer state of a partial-sum parameter")
                xp = get_array_module(v.array)
                st[k] = _wrap(xp.ascontiguousarray(layout.take(v.array, index)))
