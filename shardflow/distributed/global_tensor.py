"""Global tensors: a logical tensor laid over a placement with one sbp per mesh dimension.

A global tensor is an ordinary :class:`~shardflow.Tensor` whose ``.array`` is this rank's
shard and whose ``_spec`` (:class:`GlobalSpec`) records the placement, the sbp tuple and the
logical shape (``.shape`` answers the logical shape). Autograd runs on the shards: the ops'
local backward functions plus the boxing functions (:mod:`.boxing`) make every gradient
land in its canonical layout (``sbp.grad_sbp``), so a global leaf's ``.grad`` is a global
tensor of the leaf's layout (S stays S, B stays B) and optimizers update shards directly.

Entry points (OneFlow's names, PyTorch's aliases):

* ``tensor.to_global(placement, sbp)`` on a *local* tensor: the tensor is this rank's
  component under ``sbp`` (B: every rank passes the whole tensor; S: its chunk). The
  logical shape is inferred (one small all-gather of shapes for split dims) or given with
  ``shape=``. Same as ``from_local``.
* ``tensor.to_global(sbp=...)`` / ``redistribute`` on a *global* tensor: boxing.
* ``distribute_tensor(full, placement, sbp)``: ``full`` is the whole tensor on every rank.
* ``tensor.to_local()``: this rank's shard (differentiable), ``full_tensor()`` the whole.
* creation ops take ``placement=`` and ``sbp=`` (``shardflow.randn(4, 8, placement=p,
  sbp=sbp.split(0))``): every rank draws the whole logical tensor with its generator and
  keeps its shard, so the values do not depend on the layout (ranks must share the seed).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..backend.device import CPU
from ..backend.xp import get_array_module, to_device
from . import layout
from .boxing import Boxing, box_array
from .sbp import broadcast
from .spec import GlobalSpec, make_global, normalize_sbp

__all__ = [
    "GlobalSpec", "to_global", "to_local", "from_local", "distribute_tensor",
    "redistribute", "full_tensor", "make_global", "module_to_global", "local_map",
    "global_to_numpy", "DTensor", "distribute_module", "parameter_to_global",
]


class _Alias(Function):
    """Identity with an identity backward: a new graph node for a layout reinterpretation."""

    save_inputs = ()

    def forward(self, x):
        return x

    def backward(self, g):
        return g


def _gather_over_mesh(obj, placement):
    """Every mesh rank's ``obj``, indexed by mesh coordinate: one all_gather_object on the
    world for a placement that covers it; on a sub-mesh (``mesh["tp"]``, which leaves ranks
    out, e.g. one pipeline stage's) a gather over each mesh dimension's own group, innermost
    first, so only the placement's ranks take part."""
    if getattr(placement, "_parent", None) is None:
        from .. import comm as _comm

        shapes = _comm.get_world().all_gather_object(obj)
        return lambda coord: shapes[int(placement.ranks[coord])]
    nested = obj
    for k in reversed(range(placement.ndim)):  # group rank order = coordinate order
        nested = placement.group(k).all_gather_object(nested)

    def at(coord):
        v = nested
        for c in coord:
            v = v[c]
        return v

    return at


def _infer_shape(local, placement, sbp):
    shape = list(local.shape)
    if not any(s.is_split() for s in sbp):
        return tuple(shape)
    shape_at = _gather_over_mesh(tuple(local.shape), placement)
    for d in {s.dim for s in sbp if s.is_split()}:
        split_dims = [k for k, s in enumerate(sbp) if s.is_split() and s.dim == d]
        total = 0
        for coord in np.ndindex(*placement.shape):
            if all(coord[k] == 0 for k in range(placement.ndim) if k not in split_dims):
                total += shape_at(coord)[d]
        shape[d] = total
    return tuple(shape)


def _is_placement(obj) -> bool:
    # Read, not imported: the mesh class sits above this module (making one enables the
    # global route, which needs these conversions), so it is recognised by what it offers.
    return hasattr(obj, "coordinate") and hasattr(obj, "group") and hasattr(obj, "ranks")


def from_local(local: Tensor, placement, sbp, *, shape=None) -> Tensor:
    """A global tensor whose shard on this rank is ``local`` (OneFlow's local.to_global)."""
    if local._spec is not None:
        raise ValueError("from_local takes a local tensor; this one is global already")
    if not _is_placement(placement):
        raise TypeError(f"placement must be a shardflow.placement, got {placement!r}")
    sbp = normalize_sbp(sbp, placement, local.array.ndim)
    shape = tuple(shape) if shape is not None else _infer_shape(local.array, placement, sbp)
    layout.validate(shape, placement.shape, sbp, "to_global")
    spec = GlobalSpec(placement, sbp, shape)
    want = spec.local_shape()
    if tuple(local.array.shape) != want:
        raise ValueError(
            f"to_global: this rank's local tensor has shape {tuple(local.array.shape)}, but a "
            f"tensor of logical shape {shape} laid out as {sbp} on {placement} puts a shard of "
            f"shape {want} here; pass shape= or fix the local tensor"
        )
    out = _Alias.apply(local) if local.requires_grad else _wrap(local.array, version=local._version_counter)
    return make_global(out, spec)


def to_global(t: Tensor, placement=None, sbp=None, *, shape=None, grad_sbp=None) -> Tensor:
    """``Tensor.to_global``: from a local tensor (its component) or re-layout a global one."""
    if t._spec is None:
        if placement is None or sbp is None:
            raise ValueError(
                "to_global on a local tensor needs both placement and sbp, e.g. "
                "x.to_global(placement('cpu', [0, 1]), sbp.broadcast)"
            )
        return from_local(t, placement, sbp, shape=shape)
    spec = t._spec
    if placement is not None and placement != spec.placement:
        raise NotImplementedError(
            f"moving a global tensor from {spec.placement} to {placement} is not supported "
            "yet; re-layout within its placement (to_global(sbp=...))"
        )
    if sbp is None:
        return t
    dst = normalize_sbp(sbp, spec.placement, len(spec.shape))
    layout.validate(spec.shape, spec.placement.shape, dst, "to_global")
    if dst == spec.sbp:
        return t
    out = _run_boxing(t, spec, dst, "to_global")
    return make_global(out, spec.with_sbp(dst))


def _run_boxing(t: Tensor, spec: GlobalSpec, dst, op_name: str) -> Tensor:
    return Boxing.apply(t, spec.placement, spec.shape, spec.sbp, tuple(dst), op_name)


def _check_placements(placements, device_mesh, ndim: int, fn: str) -> None:
    """torch's errors for DTensor ``placements`` that do not fit, in torch's words first
    (session 37: shardflow's sbp words only, and a ``ValueError`` where torch raises an
    ``IndexError``): a list of another length than the mesh's dimensions (torch's
    ``distribute_tensor`` ``ValueError``), a ``Shard(dim)`` outside the tensor's dims
    (torch's ``IndexError``)."""
    if not isinstance(placements, list | tuple) or device_mesh is None:
        return
    if len(placements) != device_mesh.ndim:
        raise ValueError(
            "`placements` must have the same length as `device_mesh.ndim`! Found placements "
            f"length: {len(placements)}, and device_mesh.ndim: {device_mesh.ndim}. ({fn}: "
            f"pass one placement per mesh dimension, e.g. [Shard(0)] or [Replicate()] "
            f"for a {device_mesh.ndim}-d mesh of shape {tuple(device_mesh.shape)})")
    for p in placements:
        split = getattr(p, "is_split", None)
        if split is None or not split():
            continue
        if not -max(ndim, 1) <= p.dim < max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                f"{max(ndim, 1) - 1}], but got {p.dim}) ({fn}: Shard({p.dim}) of a tensor of "
                f"{ndim} dimension(s); shard a dim in [0, {ndim - 1}] or use Replicate())")


def redistribute(t: Tensor, device_mesh=None, placements=None, *, async_op: bool = False,
                 forward_dtype=None, backward_dtype=None) -> Tensor:
    """PyTorch's ``DTensor.redistribute(device_mesh=None, placements=None)``: boxing to
    ``placements`` within the tensor's mesh (required, as PyTorch 2.13 requires them).
    ``async_op`` is accepted; the collectives complete before it returns.
    ``forward_dtype`` / ``backward_dtype`` (casting around the collective) are refused."""
    if forward_dtype is not None or backward_dtype is not None:
        raise NotImplementedError(
            "redistribute(forward_dtype=/backward_dtype=) is not supported; cast with "
            "x.to(dtype) before or after redistribute"
        )
    if t._spec is None:
        raise ValueError("redistribute takes a global tensor (a DTensor); this one is local. "
                         "Make it global with DTensor.from_local or distribute_tensor first")
    if placements is None:
        raise RuntimeError("placements is needed for redistribute! (e.g. [Replicate()])")
    _check_placements(placements, device_mesh or t._spec.placement, len(t.shape), "redistribute")
    return to_global(t, device_mesh, placements)


def distribute_tensor(tensor: Tensor, device_mesh, placements=None, *,
                      src_data_rank: int | None = None) -> Tensor:
    """PyTorch's ``distribute_tensor``: ``tensor`` is the whole tensor on every rank; each
    keeps its shard under ``placements`` (default ``Replicate()`` on every mesh dimension).

    ``src_data_rank=None`` (shardflow's default) takes every rank's ``tensor`` as the same
    values (as after a shared seed): no communication. An int is PyTorch's semantics: the
    values of that group rank of each mesh dimension are broadcast first (one broadcast per
    mesh dimension). Either way the result is a new leaf (``requires_grad`` as ``tensor``'s),
    as PyTorch returns: gradients land in its ``.grad``, not in ``tensor``'s.
    """
    if not _is_placement(device_mesh):
        raise TypeError(f"distribute_tensor needs a DeviceMesh (shardflow.placement), got "
                        f"{device_mesh!r}")
    if tensor._spec is not None:
        raise ValueError("distribute_tensor takes a local tensor (the whole value on every "
                         "rank); this one is global already: use redistribute")
    if placements is None:
        placements = [broadcast] * device_mesh.ndim
    _check_placements(placements, device_mesh, tensor.array.ndim, "distribute_tensor")
    dst = normalize_sbp(placements, device_mesh, tensor.array.ndim)
    layout.validate(tuple(tensor.array.shape), device_mesh.shape, dst, "distribute_tensor")
    requires_grad = tensor.requires_grad
    if src_data_rank is not None:
        values = get_array_module(tensor.array).array(tensor.array, copy=True)
        for k in range(device_mesh.ndim):
            device_mesh.group(k).broadcast(values, int(src_data_rank))
        tensor = _wrap(values)
    full = from_local(tensor.detach(), device_mesh, [broadcast] * device_mesh.ndim)
    out = to_global(full, sbp=dst)
    return out.requires_grad_(True) if requires_grad else out


def to_local(t: Tensor, *, grad_placements=None) -> Tensor:
    """This rank's shard as a local tensor (gradients flow back into the global one).

    ``grad_placements`` (PyTorch's hint of the layout of the gradient that will reach the
    local tensor) is accepted and unused: a local gradient is taken in the global tensor's
    canonical gradient layout (``sbp.grad_sbp``), which is what the hint says in the usual
    case (the same placements)."""
    if t._spec is None:
        return t
    if t.requires_grad:
        return _Alias.apply(t)
    return _wrap(t.array, version=t._version_counter)


def full_tensor(t: Tensor, *, grad_placements=None) -> Tensor:
    """The whole logical tensor on every rank, as a local tensor (differentiable)."""
    if t._spec is None:
        return t
    b = to_global(t, sbp=[broadcast] * t._spec.placement.ndim)
    return to_local(b)


def global_to_numpy(t: Tensor) -> np.ndarray:
    spec = t._spec
    arr = box_array(t.array, spec.placement, spec.shape, spec.sbp,
                    (broadcast,) * spec.placement.ndim, "numpy")
    # The whole tensor ends on the host: a device shard (a cuda placement) is copied there.
    return to_device(arr, CPU)


def module_to_global(param: Tensor, placement, sbp, src=0) -> Tensor:
    """Lay a module's parameter or buffer out in place (it keeps its identity).

    The whole value is first broadcast from the placement's first rank (one broadcast per
    mesh dimension, from coordinate 0), as PyTorch's ``distribute_tensor`` /
    ``parallelize_module`` do by default (``src_data_rank=0``) and DDP does at
    construction: default seeds differ per process (PyTorch's rule), so an unseeded init
    would otherwise give each rank another whole value and the shards would not fit together.
    Then ``.array`` becomes this rank's shard.

    ``src`` picks the source coordinate: an int for every mesh dimension, a sequence with one
    entry per dimension (None skips that dimension's broadcast), or None for no broadcast at
    all (each rank keeps its own value: PyTorch's ``src_data_rank=None``).
    """
    if param._spec is not None:
        raise ValueError("module.to_global: this tensor is global already")
    sbp = normalize_sbp(sbp, placement, param.array.ndim)
    shape = tuple(param.array.shape)
    layout.validate(shape, placement.shape, sbp, "module.to_global")
    sources = (src,) * len(placement.shape) if src is None or isinstance(src, int) else tuple(src)
    for k, source in enumerate(sources):
        if source is not None and placement.shape[k] > 1:
            placement.group(k).broadcast(param.array, int(source))
    spec = GlobalSpec(placement, sbp, shape)
    index = layout.local_index(shape, placement.shape, placement.coordinate, sbp)
    local = get_array_module(param.array).ascontiguousarray(layout.take(param.array, index))
    if any(s.is_partial() for s in sbp):
        local = box_array(param.array, placement, shape, (broadcast,) * placement.ndim, sbp)
    param.array = local
    param._version_counter[0] += 1
    if param.grad is not None:
        param.grad = None
    return make_global(param, spec)


def local_map(func, out_placements, in_placements=None, device_mesh=None, *,
              redistribute_inputs: bool = False):
    """PyTorch's ``local_map``: run ``func`` on this rank's shards, and make its outputs global.

    Global arguments are passed as their local shards (``to_local``, differentiable); with
    ``in_placements`` (one sbp tuple, or None for a non-tensor, per positional argument) each is
    checked first, or boxed to it when ``redistribute_inputs``. Each tensor output ``i`` becomes
    a global tensor laid out as ``out_placements[i]`` (one sbp tuple for a single output) on the
    inputs' placement (or ``device_mesh``); its logical shape is inferred from the shards.
    """

    def wrapped(*args, **kwargs):
        mesh = device_mesh
        local_args = []
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and a._spec is not None:
                mesh = mesh or a._spec.placement
                want = None if in_placements is None else in_placements[i]
                if want is not None:
                    want = normalize_sbp(want, a._spec.placement, len(a._spec.shape))
                    if want != a._spec.sbp:
                        if not redistribute_inputs:
                            raise ValueError(
                                f"local_map: argument {i} is laid out as {a._spec.sbp}, but "
                                f"in_placements asks for {want}; pass redistribute_inputs=True "
                                "or lay it out first"
                            )
                        a = to_global(a, sbp=want)
                a = to_local(a)
            local_args.append(a)
        if mesh is None:
            raise ValueError("local_map needs a global argument or device_mesh=")
        out = func(*local_args, **kwargs)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        specs = [out_placements] if single else list(out_placements)
        res = [
            from_local(o, mesh, spec) if isinstance(o, Tensor) and spec is not None else o
            for o, spec in zip(outs, specs)
        ]
        return res[0] if single else tuple(res)

    return wrapped


# -- PyTorch's DTensor names ------------------------------------------------------------------


class _DTensorType(type):
    """``isinstance(x, DTensor)`` is true exactly for global tensors: a global tensor is an
    ordinary ``Tensor`` with a spec, not an instance of another class."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._spec is not None

    def __subclasscheck__(cls, sub) -> bool:
        return sub is cls


class DTensor(metaclass=_DTensorType):
    """PyTorch's ``DTensor``: in shardflow a global tensor (``Tensor`` with a placement and
    sbp). Not constructed directly (as in PyTorch): use :meth:`from_local`,
    :func:`distribute_tensor` or ``tensor.to_global``. A global tensor answers DTensor's API:
    ``.device_mesh``, ``.placements``, ``.to_local()``, ``.full_tensor()``,
    ``.redistribute(device_mesh, placements)``; ``.shape`` is the logical shape."""

    def __new__(cls, *args, **kwargs):
        raise TypeError(
            "DTensor is not constructed directly; use DTensor.from_local(local, device_mesh, "
            "placements) or distribute_tensor(tensor, device_mesh, placements)"
        )

    @staticmethod
    def from_local(local_tensor: Tensor, device_mesh=None, placements=None, *,
                   run_check: bool = False, shape=None, stride=None) -> Tensor:
        """A global tensor whose shard on this rank is ``local_tensor`` (PyTorch's
        ``DTensor.from_local``; placements default to ``Replicate()`` on every mesh
        dimension). Differentiable. ``run_check`` and ``stride`` are accepted: the logical
        shape of a split tensor is gathered from every rank's shard shape (one small
        all-gather, so uneven shards are right) unless ``shape`` is given."""
        if device_mesh is None:
            raise ValueError("DTensor.from_local needs device_mesh= (shardflow keeps no "
                             "current mesh); pass the DeviceMesh the local tensors live on")
        if placements is None:
            placements = [broadcast] * device_mesh.ndim
        _check_placements(placements, device_mesh, local_tensor.ndim, "DTensor.from_local")
        return from_local(local_tensor, device_mesh, placements, shape=shape)


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):
    """PyTorch's ``distribute_module``: ``partition_fn(name, submodule, device_mesh)`` is
    called on every submodule (it lays parameters out, e.g. with
    ``register_parameter(n, nn.Parameter(distribute_tensor(p, mesh, [Shard(0)])))``), then
    every parameter and buffer still local is made ``Replicate()`` in place (each rank's
    values, taken as equal). ``input_fn(module, inputs, device_mesh)`` becomes a forward
    pre-hook and ``output_fn(module, outputs, device_mesh)`` a forward hook. Returns
    ``module``."""
    if not _is_placement(device_mesh):
        raise ValueError(f"distribute_module needs a DeviceMesh, got {device_mesh!r}")
    replicate = [broadcast] * device_mesh.ndim
    for name, sub in module.named_modules():
        if partition_fn is not None:
            partition_fn(name, sub, device_mesh)
        for coll in (sub._parameters, sub._buffers):
            for t in coll.values():
                if t is not None and t._spec is None:
                    module_to_global(t, device_mesh, replicate)
    if input_fn is not None:
        module.register_forward_pre_hook(
            lambda mod, inputs: input_fn(mod, inputs, device_mesh))
    if output_fn is not None:
        module.register_forward_hook(
            lambda mod, inputs, outputs: output_fn(mod, outputs, device_mesh))
    return module


def parameter_to_global(param: Tensor, source: Tensor) -> Tensor:
    """``nn.Parameter(global_tensor)``: the new parameter (sharing ``source``'s shard) takes
    its layout, and its ``.grad`` will have the layout's gradient layout (called by
    ``nn.Parameter`` through the op table: nn sits below this layer)."""
    return make_global(param, source._spec)
