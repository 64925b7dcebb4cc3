"""Tensor parallelism with PyTorch's names, on global tensors (``parallelize_module``).

A *parallel style* lays a module's parameters out over the tensor-parallel mesh dimension
and, through forward hooks, converts the module's inputs and outputs. Because the layers
compute on global tensors, the model code never changes: a ``view(B, T, n_head, hs)`` sees
the logical ``n_head`` and the sbp rules keep the heads split.

=======================  =====================================================================
``ColwiseParallel``      Linear weight and bias ``S(0)`` (output features); Embedding weight
                         ``S(1)``. Input wanted ``B``; output ``S(-1)``. ``blocks=3`` splits a
                         fused q/k/v projection so each rank holds its heads of q, k and v.
``RowwiseParallel``      Linear weight ``S(1)`` (input features), bias ``B``; Embedding weight
                         ``S(0)`` (vocabulary parallel). Input wanted ``S(-1)``; output
                         ``Partial`` until something needs it whole (one all-reduce), or
                         ``output_layouts=Shard(1)`` for a reduce-scatter (sequence parallel).
``SequenceParallel``     Parameters ``B``; input laid out ``S(sequence_dim)``.
``PrepareModuleInput``   Lay positional inputs out as ``input_layouts`` (local tensors are
                         taken as that layout), then box to ``desired_input_layouts``.
``PrepareModuleOutput``  The same for outputs.
=======================  =====================================================================

Communication plan of Megatron's MLP/attention pair (``Colwise`` then ``Rowwise``): forward,
one all-reduce where the partial output is first needed whole (the next LayerNorm);
backward, one all-reduce of the column-parallel layer's input gradient (``BroadcastUse``).
Deviation from PyTorch: outputs stay global (``use_local_output=False`` by default) so that
unmodified model code runs on them.

Several mesh dimensions: pass the tensor-parallel sub-mesh (``mesh["tp"]`` of
``init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))``); parameters are then laid
out on the whole mesh, broadcast on the other dimensions (data parallel there).
"""

from __future__ import annotations

import fnmatch

from .global_tensor import from_local, to_global, to_local
from .sbp import Broadcast, Partial, Split, broadcast

__all__ = [
    "ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel",
    "PrepareModuleInput", "PrepareModuleOutput", "parallelize_module", "data_tensor_parallel",
    "loss_parallel",
]


def _mesh_and_dim(device_mesh):
    parent = getattr(device_mesh, "_parent", None)
    if parent is not None:
        return parent[0], parent[1]
    if device_mesh.ndim != 1:
        raise ValueError(
            f"parallelize_module needs a 1-D mesh or a sub-mesh such as mesh['tp']; got a "
            f"{device_mesh.ndim}-D mesh {device_mesh}"
        )
    return device_mesh, 0


def _layout(mesh, dim, s):
    """One sbp on the tensor-parallel mesh dim, broadcast on the others."""
    out = [broadcast] * mesh.ndim
    out[dim] = s
    return tuple(out)


def _to_layout(t, mesh, dim, layout, desired=None):
    """Make ``t`` global (a local ``t`` is taken as ``layout``), then box to ``desired``."""
    from ..autograd import Tensor

    if not isinstance(t, Tensor):
        return t
    if t._spec is None:
        if layout is None:
            return t
        t = from_local(t, mesh, _layout(mesh, dim, layout))
    if desired is not None:
        want = list(t._spec.sbp)
        want[dim] = desired
        t = to_global(t, sbp=tuple(want))
    return t


class ParallelStyle:
    def apply(self, module, mesh, dim):  # pragma: no cover - interface
        raise NotImplementedError


def _shard_params(module, mesh, dim, layouts):
    from ..autograd.dispatch import op

    convert = op("_module_to_global")
    for name, t in list(module._parameters.items()) + list(module._buffers.items()):
        if t is None or t._spec is not None:
            continue
        s = layouts.get(name, broadcast)
        if s.is_split() and s.dim >= t.array.ndim:
            s = broadcast
        convert(t, mesh, _layout(mesh, dim, s))


def _kind(module):
    name = type(module).__name__
    if name in ("Linear", "Embedding"):
        return name
    raise NotImplementedError(
        f"this parallel style supports nn.Linear and nn.Embedding, got {name}; lay other "
        "modules out with module.to_global(placement, sbp)"
    )


def _hook_io(module, mesh, dim, style, default_in, want_in):
    """Forward hooks shared by the Linear/Embedding styles: lay inputs out (a local input is
    taken as ``style.input_layouts`` or ``default_in``) and box to ``want_in``; box the output
    to ``style.output_layouts`` and return it local if ``style.use_local_output``."""

    def pre(mod, args):
        layout = style.input_layouts or default_in
        return tuple(_to_layout(a, mesh, dim, layout, want_in) for a in args)

    def post(mod, args, out):
        out = _to_layout(out, mesh, dim, None, style.output_layouts)
        return to_local(out) if style.use_local_output else out

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)


class ColwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=False,
                 blocks: int = 1):
        self.input_layouts = input_layouts
        self.output_layouts = output_layouts
        self.use_local_output = use_local_output
        self.blocks = blocks

    def apply(self, module, mesh, dim):
        if _kind(module) == "Linear":
            _shard_params(module, mesh, dim, {"weight": Split(0, self.blocks), "bias": Split(0, self.blocks)})
            _hook_io(module, mesh, dim, self, broadcast, broadcast)
        else:
            _shard_params(module, mesh, dim, {"weight": Split(1, self.blocks)})
            _hook_io(module, mesh, dim, self, broadcast, None)


class RowwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=False):
        self.input_layouts = input_layouts
        self.output_layouts = output_layouts
        self.use_local_output = use_local_output

    def apply(self, module, mesh, dim):
        if _kind(module) == "Linear":
            _shard_params(module, mesh, dim, {"weight": Split(1), "bias": broadcast})
            _hook_io(module, mesh, dim, self, Split(-1), Split(-1))
        else:
            _shard_params(module, mesh, dim, {"weight": Split(0)})
            _hook_io(module, mesh, dim, self, broadcast, broadcast)


class SequenceParallel(ParallelStyle):
    def __init__(self, *, sequence_dim: int = 1, use_local_output=False):
        self.sequence_dim = sequence_dim
        self.use_local_output = use_local_output

    def apply(self, module, mesh, dim):
        _shard_params(module, mesh, dim, {})
        seq = Split(self.sequence_dim)

        def pre(mod, args):
            return tuple(_to_layout(a, mesh, dim, seq, seq) for a in args)

        module.register_forward_pre_hook(pre)


class PrepareModuleInput(ParallelStyle):
    def __init__(self, *, input_layouts=None, desired_input_layouts=None, use_local_output=False):
        self.input_layouts = _as_list(input_layouts)
        self.desired = _as_list(desired_input_layouts)

    def apply(self, module, mesh, dim):
        style = self

        def pre(mod, args):
            out = []
            for i, a in enumerate(args):
                lay = style.input_layouts[i] if i < len(style.input_layouts) else None
                want = style.desired[i] if i < len(style.desired) else None
                out.append(_to_layout(a, mesh, dim, lay, want))
            return tuple(out)

        module.register_forward_pre_hook(pre)


class PrepareModuleOutput(ParallelStyle):
    def __init__(self, *, output_layouts=None, desired_output_layouts=None, use_local_output=False):
        self.output_layouts = _as_list(output_layouts)
        self.desired = _as_list(desired_output_layouts)
        self.use_local_output = use_local_output

    def apply(self, module, mesh, dim):
        style = self

        def post(mod, args, out):
            single = not isinstance(out, tuple)
            outs = (out,) if single else out
            res = []
            for i, o in enumerate(outs):
                lay = style.output_layouts[i] if i < len(style.output_layouts) else None
                want = style.desired[i] if i < len(style.desired) else None
                o = _to_layout(o, mesh, dim, lay, want)
                res.append(to_local(o) if style.use_local_output else o)
            return res[0] if single else tuple(res)

        module.register_forward_hook(post)


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, Split | Broadcast | Partial):
        return [x]
    return list(x)


def parallelize_module(module, device_mesh, parallelize_plan):
    """Apply ``parallelize_plan`` ({module path pattern: style} or one style) to ``module``.

    Patterns are ``fnmatch`` globs on ``named_modules()`` paths (``"transformer.h.*.mlp.c_fc"``).
    Parameters no style touches stay as they are (lay them out with ``module.to_global``).
    """
    mesh, dim = _mesh_and_dim(device_mesh)
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.apply(module, mesh, dim)
        return module
    if not isinstance(parallelize_plan, dict):
        raise TypeError(
            f"parallelize_plan must be a ParallelStyle or a dict of module path -> style, got "
            f"{type(parallelize_plan).__name__}"
        )
    names = dict(module.named_modules())
    for pattern, style in parallelize_plan.items():
        hits = [n for n in names if n and fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            raise ValueError(
                f"parallelize_plan: no submodule matches {pattern!r}; module paths look like "
                f"{[n for n in names if n][:5]}"
            )
        for n in hits:
            style.apply(names[n], mesh, dim)
    return module


def data_tensor_parallel(model, dp: int, tp: int, plan=None):
    """Lay ``model`` out for ``dp`` data-parallel x ``tp`` tensor-parallel ranks.

    Builds the ``(dp, tp)`` mesh (``init_device_mesh``, names ``("dp", "tp")``), applies
    ``plan`` (e.g. ``GPT.tensor_parallel_plan()``) on the ``tp`` dimension when ``tp > 1``
    and lays every other parameter and buffer out as broadcast. Returns ``(mesh,
    data_sbp)``: a batch made global with ``data_sbp`` (``S(0)`` on dp, ``B`` on tp) is split
    across the data-parallel ranks. Checked before anything is laid out: ``dp * tp`` must be
    the world size.
    """
    from .. import comm as _comm
    from .placement import init_device_mesh

    world = _comm.get_world().size
    for name, v in (("dp", dp), ("tp", tp)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if dp * tp != world:
        raise ValueError(
            f"dp x tp = {dp} x {tp} = {dp * tp}, but the job has {world} rank(s); launch with "
            f"`shardflow run -n {dp * tp} ...` or choose dp and tp whose product is {world}"
        )
    # the mesh's device type is the model's (a GPU model's shards stay on the GPU, over NCCL)
    kind = next((p.device.type for p in model.parameters()), "cpu")
    mesh = init_device_mesh(kind, (dp, tp), mesh_dim_names=("dp", "tp"))
    if tp > 1 and plan:
        parallelize_module(model, mesh["tp"], plan)
    model.to_global(mesh, (broadcast, broadcast))
    return mesh, (Split(0), broadcast)


class loss_parallel:  # noqa: N801 - PyTorch's name (a context manager)
    """PyTorch's ``loss_parallel()``: cross-entropy on logits split on the class dimension
    without gathering them. Here the sbp rule does that whenever the logits arrive split on
    the class dim, so this context manager only marks the intent (kept for PyTorch code)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
