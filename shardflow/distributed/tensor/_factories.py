"""``torch.distributed.tensor``'s factory functions (``ones``, ``zeros``, ``empty``, ``full``,
``rand``, ``randn``) with PyTorch's keywords ``device_mesh=`` / ``placements=``: the creation
ops' ``placement=`` / ``sbp=`` (``rules/creation.py``: the whole tensor is made on every rank
and each keeps its shard, so the values do not depend on the layout). Placements default to
``Replicate()`` on every mesh dimension, as in PyTorch."""

from __future__ import annotations

from ... import ops as _ops
from ..sbp import broadcast

__all__ = ["ones", "zeros", "empty", "full", "rand", "randn"]


def _layout(device_mesh, placements):
    if device_mesh is None:
        raise ValueError("shardflow has no current device mesh: pass device_mesh=")
    return device_mesh, (list(placements) if placements is not None
                         else [broadcast] * device_mesh.ndim)


def _make(op, size, fill, requires_grad, dtype, device_mesh, placements):
    mesh, sbp = _layout(device_mesh, placements)
    args = (size,) if fill is None else (size, fill)
    return op(*args, dtype=dtype, requires_grad=requires_grad, placement=mesh, sbp=sbp)


def _size(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], list | tuple) else size


def ones(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None, placements=None):
    return _make(lambda s, **kw: _ops.ones(*s, **kw), _size(size), None, requires_grad, dtype,
                 device_mesh, placements)


def zeros(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None, placements=None):
    return _make(lambda s, **kw: _ops.zeros(*s, **kw), _size(size), None, requires_grad, dtype,
                 device_mesh, placements)


def empty(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None, placements=None):
    return _make(lambda s, **kw: _ops.empty(*s, **kw), _size(size), None, requires_grad, dtype,
                 device_mesh, placements)


def full(size, fill_value, *, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    return _make(lambda s, f, **kw: _ops.full(s, f, **kw), tuple(size), fill_value,
                 requires_grad, dtype, device_mesh, placements)


def rand(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None, placements=None):
    return _make(lambda s, **kw: _ops.rand(*s, **kw), _size(size), None, requires_grad, dtype,
                 device_mesh, placements)


def randn(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None, placements=None):
    return _make(lambda s, **kw: _ops.randn(*s, **kw), _size(size), None, requires_grad, dtype,
                 device_mesh, placements)
