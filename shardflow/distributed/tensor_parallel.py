"""Tensor parallelism with PyTorch's names and semantics, on global tensors.

A *parallel style* lays a module's parameters out over the tensor-parallel mesh dimension
and, through forward hooks, converts the module's inputs and outputs, exactly as PyTorch
2.13's ``torch.distributed.tensor.parallel`` does with DTensors (a global tensor here).

Defaults (PyTorch's; ``R`` = ``Replicate()`` = ``B``, ``S(d)`` = ``Shard(d)``; "in" is how a
local input is taken, "wants" the layout it is boxed to, "out" the output layout):

============================  ===========================  =========  ==========  =========  ======
style                         parameters                   in         wants       out        local
============================  ===========================  =========  ==========  =========  ======
``ColwiseParallel``           Linear W, b ``S(0)``;        ``R``      ``R``       ``S(-1)``  yes
                              Embedding W ``S(1)``
``RowwiseParallel``           Linear W ``S(1)``, b ``R``;  ``S(-1)``  Linear      ``R``      yes
                              Embedding W ``S(0)``                    ``S(-1)``,
                                                                      Emb. ``R``
``SequenceParallel``          ``R``                        ``S(1)``   ``S(1)``    as made    no
``PrepareModuleInput``        untouched                    given      given       --         no
``PrepareModuleOutput``       untouched                    --         --          given      yes
``PrepareModuleInputOutput``  the two above                given      given       given      no/yes
============================  ===========================  =========  ==========  =========  ======

*Local vs global.* A style whose ``use_local_output`` is true returns ``to_local()`` of its
(boxed) output: this rank's shard as a plain tensor. ``RowwiseParallel(output_layouts=
Shard(0))`` on a (40, 5) output returns the (20, 5) shard on each of 2 ranks, so model code
after it computes on shards, as PyTorch's does. Pass ``use_local_output=False`` to keep the
global tensor (the logical (40, 5), laid out ``S(0)``) — what lets unmodified model code run
on logical shapes (``GPT.tensor_parallel_plan()`` does that).

*Inputs.* A local input is this rank's component under the style's input layout
(``from_local``; e.g. ``RowwiseParallel`` takes a local input as the ``S(-1)`` shard, so a
plain (4, 8) tensor on 2 ranks is the logical (4, 16)). A global input is boxed to the desired
layout (PyTorch redistributes when the declared ``input_layouts`` differ from the desired ones;
the two agree when the input is laid out as declared). Colwise/Rowwise/SequenceParallel
convert the first positional input (the one Linear, Embedding and norms take) and leave any
others as they are.

*Parameters.* ``parallelize_module(..., src_data_rank=0)`` (the default) broadcasts each
parameter a Colwise/Rowwise style splits from that rank of the tensor-parallel group before
keeping this rank's shard, so every rank's shard comes from one whole tensor (PyTorch's
single-device semantics); ``src_data_rank=None`` keeps each rank's own values.
``SequenceParallel`` makes parameters broadcast from the local values (PyTorch's ``from_local``:
they are assumed equal, as a ones-initialised norm's are).

Communication plan of Megatron's MLP pair (``Colwise`` then ``Rowwise``): forward, one
all-reduce of the row-parallel output (or, with ``RowwiseParallel(output_layouts=Partial(),
use_local_output=False)``, where the partial sum is first needed whole); backward, one
all-reduce of the column-parallel input's gradient (``BroadcastUse``).

Several mesh dimensions: pass the tensor-parallel sub-mesh (``mesh["tp"]`` of
``init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))``); parameters are then laid
out on the whole mesh, broadcast on the other dimensions (data parallel there), and layouts
change on the ``tp`` dimension only.

shardflow's addition: ``ColwiseParallel(blocks=k)`` splits a fused projection (q/k/v: ``k=3``)
so each rank holds its chunk of every block (PyTorch's ``_StridedShard``); its output is then
``S(-1, blocks=k)`` by default.
"""

from __future__ import annotations

import fnmatch
import warnings

from .global_tensor import from_local, to_global, to_local
from .sbp import SbpType, Split, broadcast

__all__ = [
    "ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel",
    "PrepareModuleInput", "PrepareModuleOutput", "PrepareModuleInputOutput",
    "parallelize_module", "data_tensor_parallel", "loss_parallel",
]

_REPLICATE = broadcast
_SHARD_LAST = Split(-1)


# -- meshes and layouts -------------------------------------------------------------------

def _mesh_and_dim(device_mesh):
    """(mesh the tensors live on, tensor-parallel mesh dim): a sub-mesh ``mesh["tp"]`` lays
    tensors out on its parent mesh."""
    parent = getattr(device_mesh, "_parent", None)
    if parent is not None:
        return parent[0], parent[1]
    if device_mesh.ndim != 1:
        raise ValueError(
            f"parallelize_module needs a 1-D mesh or a sub-mesh such as mesh['tp']; got a "
            f"{device_mesh.ndim}-D mesh {device_mesh}"
        )
    return device_mesh, 0


def _on_mesh(mesh, dim, s):
    """One sbp on the tensor-parallel mesh dim, broadcast on the others."""
    out = [broadcast] * mesh.ndim
    out[dim] = s
    return tuple(out)


def _is_tensor(t) -> bool:
    from ..autograd import Tensor

    return isinstance(t, Tensor)


def _annotate(t, mesh, dim, layout):
    """A local tensor becomes global, taken as this rank's component under ``layout``
    (``DTensor.from_local``); a global tensor (or a non-tensor) is returned as it is."""
    if not _is_tensor(t) or t._spec is not None:
        return t
    return from_local(t, mesh, _on_mesh(mesh, dim, layout))


def _box(t, dim, layout):
    """Re-lay a global tensor out as ``layout`` on the tensor-parallel mesh dim (no-op when it
    already is; ``redistribute``); anything else is returned as it is."""
    if not _is_tensor(t) or t._spec is None or layout is None:
        return t
    want = list(t._spec.sbp)
    want[dim] = layout
    return to_global(t, sbp=tuple(want))


def _local_if(t, use_local_output: bool):
    return to_local(t) if use_local_output and _is_tensor(t) else t


def _as_layouts(x, what: str):
    """PyTorch accepts one placement or a tuple of them (``None`` = leave that one alone)."""
    if x is None or isinstance(x, SbpType):
        return x if x is None else (x,)
    if isinstance(x, list | tuple) and all(v is None or isinstance(v, SbpType) for v in x):
        return tuple(x)
    raise TypeError(
        f"{what} takes a placement (Shard(d), Replicate(), Partial()) or a tuple of them with "
        f"None for inputs to leave alone; got {x!r}"
    )


# -- the styles ---------------------------------------------------------------------------

class ParallelStyle:
    """PyTorch's contract: ``_apply(module, device_mesh)`` parallelizes ``module``.

    shardflow's styles implement ``apply(module, mesh, dim)`` (``mesh`` the placement tensors
    live on, ``dim`` its tensor-parallel dimension), which ``_apply`` calls after resolving a
    sub-mesh; a user style may override ``_apply`` alone, as in PyTorch.
    """

    src_data_rank: int | None = 0

    def _apply(self, module, device_mesh):
        mesh, dim = _mesh_and_dim(device_mesh)
        self.apply(module, mesh, dim)
        return module

    def apply(self, module, mesh, dim):
        raise NotImplementedError(
            f"{type(self).__name__} must implement _apply(module, device_mesh) (PyTorch's "
            "ParallelStyle contract) or apply(module, mesh, dim)"
        )


def _shard_params(module, mesh, dim, layouts, src_data_rank):
    """Lay ``module``'s own parameters and buffers out in place: ``layouts[name]`` on the
    tensor-parallel dim (others broadcast). Communication: with ``src_data_rank`` set, one
    broadcast per mesh dimension and tensor (``module_to_global``): over the tensor-parallel
    group from ``src_data_rank`` (so the shards come from that rank's whole tensor), over any
    other dimension from its first coordinate; with None, none (each rank's own values)."""
    from ..autograd.dispatch import op

    todo = [(n, t) for n, t in list(module._parameters.items()) + list(module._buffers.items())
            if t is not None and t._spec is None]
    src = None
    if src_data_rank is not None:
        size = mesh.size(dim)
        if not isinstance(src_data_rank, int) or not 0 <= src_data_rank < size:
            raise ValueError(
                f"src_data_rank must be None or a rank of the tensor-parallel group (0 .. "
                f"{size - 1}), got {src_data_rank!r}"
            )
        # the tensor-parallel dim's values come from src_data_rank; any other mesh dim's from
        # its first coordinate (as Module.to_global)
        src = tuple(src_data_rank if k == dim else 0 for k in range(mesh.ndim))
    convert = op("_module_to_global")
    for name, t in todo:
        s = layouts.get(name, broadcast)
        if s.is_split() and s.dim >= t.array.ndim:
            s = broadcast
        convert(t, mesh, _on_mesh(mesh, dim, s), src)


def _kind(module, style: str):
    from ..nn import Embedding, Linear

    name = type(module).__name__
    if isinstance(module, Linear) or name == "Linear":
        return "Linear"
    if isinstance(module, Embedding) or name == "Embedding":
        return "Embedding"
    raise NotImplementedError(
        f"{style} supports nn.Linear and nn.Embedding (as PyTorch's does), got {name}; lay "
        "other modules out with module.to_global(placement, sbp) or PrepareModuleInput/Output"
    )


def _hook_first_input_and_output(module, mesh, dim, input_layout, desired_input, output_layout,
                                 use_local_output):
    """Colwise/Rowwise hooks: the first input is annotated as ``input_layout`` (when local)
    and boxed to ``desired_input``; the output is boxed to ``output_layout`` and returned
    local when ``use_local_output``."""

    def pre(mod, args):
        if not args:
            return None
        x = _box(_annotate(args[0], mesh, dim, input_layout), dim, desired_input)
        return (x, *args[1:])

    def post(mod, args, out):
        return _local_if(_box(out, dim, output_layout), use_local_output)

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)


def _repr(style, **fields) -> str:
    return type(style).__name__ + "(" + ", ".join(f"{k}={v}" for k, v in fields.items()) + ")"


class _SplitLinearStyle(ParallelStyle):
    """What ColwiseParallel and RowwiseParallel share: shard the module's parameters by
    :meth:`_param_layouts`, then hook its first input (``input_layouts[0]`` boxed to
    ``desired_input_layouts[0]``) and its output (boxed to ``output_layouts[0]``)."""

    def _param_layouts(self, module) -> dict:
        """The sbp of each parameter of ``module`` (and, for Rowwise, its desired input layout)."""
        raise NotImplementedError

    def apply(self, module, mesh, dim):
        _shard_params(module, mesh, dim, self._param_layouts(module), self.src_data_rank)
        _hook_first_input_and_output(module, mesh, dim, self.input_layouts[0],
                                     self.desired_input_layouts[0], self.output_layouts[0],
                                     self.use_local_output)
        return module

    def __repr__(self) -> str:
        return _repr(self, input_layouts=self.input_layouts, output_layouts=self.output_layouts,
                     use_local_output=self.use_local_output)


class ColwiseParallel(_SplitLinearStyle):
    """Column-wise split of an ``nn.Linear`` (weight and bias ``S(0)``: output features) or
    ``nn.Embedding`` (weight ``S(1)``). Input: a local one is taken as ``input_layouts``
    (default ``Replicate()``), then made ``Replicate()``; output: ``S(-1)`` boxed to
    ``output_layouts`` (default ``Shard(-1)``), returned as this rank's local shard unless
    ``use_local_output=False``. Communication: backward all-reduces the input's gradient."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output: bool = True,
                 blocks: int = 1):
        super().__init__()
        if not isinstance(blocks, int) or blocks < 1:
            raise ValueError(f"ColwiseParallel(blocks=k) needs an int k >= 1, got {blocks!r}")
        self.blocks = blocks
        self.input_layouts = (input_layouts or _REPLICATE,)
        self.output_layouts = (output_layouts or Split(-1, blocks),)
        self.desired_input_layouts = (_REPLICATE,)
        self.use_local_output = use_local_output

    def _param_layouts(self, module) -> dict:
        if _kind(module, "ColwiseParallel") == "Linear":
            layouts = {"weight": Split(0, self.blocks), "bias": Split(0, self.blocks)}
        else:
            layouts = {"weight": Split(1, self.blocks)}
        return layouts


class RowwiseParallel(_SplitLinearStyle):
    """Row-wise split of an ``nn.Linear`` (weight ``S(1)``: input features; bias
    ``Replicate()``) or ``nn.Embedding`` (weight ``S(0)``: vocabulary parallel). Input: a
    local one is taken as ``input_layouts`` (default ``Shard(-1)``, for an Embedding too, as in
    PyTorch), then made ``S(-1)`` (Linear) or ``Replicate()`` (Embedding); output: a partial
    sum boxed to ``output_layouts`` (default ``Replicate()``: one all-reduce; ``Shard(d)``: a
    reduce-scatter; ``Partial()``: none), returned local unless ``use_local_output=False``."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output: bool = True):
        super().__init__()
        self.input_layouts = (input_layouts or _SHARD_LAST,)
        self.output_layouts = (output_layouts or _REPLICATE,)
        self.use_local_output = use_local_output

    def _param_layouts(self, module) -> dict:
        if _kind(module, "RowwiseParallel") == "Linear":
            layouts = {"weight": Split(1), "bias": broadcast}
            self.desired_input_layouts = (_SHARD_LAST,)
        else:
            layouts = {"weight": Split(0)}
            self.desired_input_layouts = (_REPLICATE,)
        return layouts


class SequenceParallel(ParallelStyle):
    """Parameters ``Replicate()`` (from the local values, no communication); the first input
    is taken as ``S(sequence_dim)`` when local, boxed to it when global; the module computes
    on sequence shards and its output is returned global unless ``use_local_output=True``."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        super().__init__()
        self.sequence_sharding = (Split(sequence_dim),)
        self.use_local_output = use_local_output

    def apply(self, module, mesh, dim):
        _shard_params(module, mesh, dim, {}, None)
        seq = self.sequence_sharding[0]

        def pre(mod, args):
            if not args or not _is_tensor(args[0]):
                raise ValueError(
                    f"SequenceParallel expects the first input of {type(mod).__name__} to be a "
                    f"tensor (local or global), got {type(args[0]).__name__ if args else 'none'}"
                )
            return (_box(_annotate(args[0], mesh, dim, seq), dim, seq), *args[1:])

        def post(mod, args, out):
            return _local_if(out, self.use_local_output)

        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
        return module

    def __repr__(self) -> str:
        return _repr(self, sequence_dim=self.sequence_sharding[0].dim,
                     use_local_output=self.use_local_output)


def _prepare(x, mesh, dim, layout, desired, use_local, what):
    """PrepareModuleInput/Output on one value: ``None`` layout = leave alone; a local tensor is
    annotated as ``layout``, then boxed to ``desired``, then made local if ``use_local``."""
    if layout is None:
        return x
    if not _is_tensor(x):
        raise TypeError(f"{what}: a layout was given for a value that is not a tensor "
                        f"({type(x).__name__}); put None at its position")
    return _local_if(_box(_annotate(x, mesh, dim, layout), dim, desired), use_local)


class PrepareModuleInput(ParallelStyle):
    """Lay a module's inputs out before ``forward``: positional input ``i`` (a local one taken
    as ``input_layouts[i]``; ``None`` leaves it alone) is boxed to ``desired_input_layouts[i]``;
    keyword inputs likewise with ``input_kwarg_layouts`` / ``desired_input_kwarg_layouts``.
    With ``use_local_output=True`` the module receives local tensors."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts=None,
                 desired_input_kwarg_layouts=None, use_local_output: bool = False):
        self.input_layouts = _as_layouts(input_layouts, "PrepareModuleInput(input_layouts=)")
        self.desired_input_layouts = _as_layouts(
            desired_input_layouts, "PrepareModuleInput(desired_input_layouts=)")
        self.use_local_output = use_local_output
        if self.input_layouts is not None:
            if self.desired_input_layouts is None:
                raise ValueError("PrepareModuleInput: input_layouts were given without "
                                 "desired_input_layouts; pass both, one entry per input")
            if len(self.input_layouts) != len(self.desired_input_layouts):
                raise ValueError(
                    f"PrepareModuleInput: input_layouts and desired_input_layouts should have "
                    f"the same length, got {len(self.input_layouts)} and "
                    f"{len(self.desired_input_layouts)}")
        self.with_kwargs = input_kwarg_layouts is not None
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        if self.with_kwargs and len(self.input_kwarg_layouts) != len(self.desired_input_kwarg_layouts):
            raise ValueError(
                f"PrepareModuleInput: input_kwarg_layouts and desired_input_kwarg_layouts should "
                f"have the same length, got {sorted(self.input_kwarg_layouts)} and "
                f"{sorted(self.desired_input_kwarg_layouts)}")

    def _prepare_args(self, args, mesh, dim):
        if self.input_layouts is None:
            return args
        if len(args) != len(self.input_layouts):
            raise ValueError(
                f"PrepareModuleInput: the module got {len(args)} positional input(s) but "
                f"input_layouts has {len(self.input_layouts)}; give one layout per input "
                "(None for those to leave alone)")
        return tuple(
            _prepare(a, mesh, dim, lay, want, self.use_local_output, "PrepareModuleInput")
            for a, lay, want in zip(args, self.input_layouts, self.desired_input_layouts)
        )

    def apply(self, module, mesh, dim):
        if self.with_kwargs:
            def pre_kw(mod, args, kwargs):
                new = {k: _prepare(v, mesh, dim, self.input_kwarg_layouts.get(k),
                                   self.desired_input_kwarg_layouts.get(k), self.use_local_output,
                                   "PrepareModuleInput")
                       for k, v in kwargs.items()}
                return self._prepare_args(args, mesh, dim), new

            module.register_forward_pre_hook(pre_kw, with_kwargs=True)
        else:
            module.register_forward_pre_hook(lambda mod, args: self._prepare_args(args, mesh, dim))
        return module

    def __repr__(self) -> str:
        return _repr(self, input_layouts=self.input_layouts,
                     desired_input_layouts=self.desired_input_layouts,
                     input_kwarg_layouts=self.input_kwarg_layouts,
                     desired_input_kwarg_layouts=self.desired_input_kwarg_layouts,
                     use_local_output=self.use_local_output)


class PrepareModuleOutput(ParallelStyle):
    """Lay a module's outputs out after ``forward``: output ``i`` (a local one taken as
    ``output_layouts[i]``; ``None`` leaves it alone) is boxed to ``desired_output_layouts[i]``
    and returned local unless ``use_local_output=False``. A single output comes back single."""

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output: bool = True):
        self.output_layouts = _as_layouts(output_layouts, "PrepareModuleOutput(output_layouts=)")
        self.desired_output_layouts = _as_layouts(
            desired_output_layouts, "PrepareModuleOutput(desired_output_layouts=)")
        self.use_local_output = use_local_output
        if (self.output_layouts is None or self.desired_output_layouts is None
                or len(self.output_layouts) != len(self.desired_output_layouts)):
            raise ValueError(
                f"PrepareModuleOutput: output_layouts and desired_output_layouts should have "
                f"the same length, got {output_layouts!r} and {desired_output_layouts!r}")

    def _prepare_outputs(self, out, mesh, dim):
        outs = out if isinstance(out, tuple) else (out,)
        if len(outs) != len(self.output_layouts):
            raise ValueError(
                f"PrepareModuleOutput: the module returned {len(outs)} output(s) but "
                f"output_layouts has {len(self.output_layouts)}; give one layout per output "
                "(None for those to leave alone)")
        res = [_prepare(o, mesh, dim, lay, want, self.use_local_output, "PrepareModuleOutput")
               for o, lay, want in zip(outs, self.output_layouts, self.desired_output_layouts)]
        return res[0] if len(res) == 1 else tuple(res)

    def apply(self, module, mesh, dim):
        module.register_forward_hook(lambda mod, args, out: self._prepare_outputs(out, mesh, dim))
        return module

    def __repr__(self) -> str:
        return _repr(self, output_layouts=self.output_layouts,
                     desired_output_layouts=self.desired_output_layouts,
                     use_local_output=self.use_local_output)


class PrepareModuleInputOutput(ParallelStyle):
    """``PrepareModuleInput`` (``use_local_input``, default False) and
    ``PrepareModuleOutput`` (``use_local_output``, default True) on one module."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts=None,
                 desired_input_kwarg_layouts=None, use_local_input: bool = False, output_layouts,
                 desired_output_layouts, use_local_output: bool = True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts,
            desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)

    def apply(self, module, mesh, dim):
        self.prepare_module_input.apply(module, mesh, dim)
        self.prepare_module_output.apply(module, mesh, dim)
        return module

    def __repr__(self) -> str:
        i, o = self.prepare_module_input, self.prepare_module_output
        return _repr(self, input_layouts=i.input_layouts,
                     desired_input_layouts=i.desired_input_layouts,
                     input_kwarg_layouts=i.input_kwarg_layouts,
                     desired_input_kwarg_layouts=i.desired_input_kwarg_layouts,
                     use_local_input=i.use_local_output, output_layouts=o.output_layouts,
                     desired_output_layouts=o.desired_output_layouts,
                     use_local_output=o.use_local_output)


# -- applying a plan ----------------------------------------------------------------------

def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """PyTorch's ``parallelize_module``: apply ``parallelize_plan`` to ``module``; returns it.

    ``parallelize_plan`` is one style (applied to ``module``) or a dict {module path: style}.
    A path is matched one dot-separated token at a time against ``named_children()`` with
    ``fnmatch`` (``"layers.*.mlp.fc1"``: ``*`` matches one child name, never a dot), every
    matching child receives the rest of the path; ``""`` is ``module`` itself. A key that
    matches nothing is skipped with a warning naming the token and the children there (as in
    PyTorch). ``src_data_rank`` (default 0): the tensor-parallel rank whose whole parameters
    every rank's shards are cut from (one broadcast per split parameter); ``None`` keeps each
    rank's own values. ``device_mesh`` is a 1-D mesh or a sub-mesh such as ``mesh["tp"]``.
    """
    if device_mesh is None:
        raise RuntimeError(
            "parallelize_module needs device_mesh (shardflow has no current-mesh context): pass "
            "init_device_mesh('cpu', (tp,)) or mesh['tp']")
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at the "
                      "moment, so this parallelize_module call will do nothing.", stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, device_mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(
            f"parallelize_plan must be a ParallelStyle or a dict of module path -> style, got "
            f"{type(parallelize_plan).__name__}")
    for path, style in parallelize_plan.items():
        if path == "":
            parallelize_module(module, device_mesh, style, src_data_rank=src_data_rank)
            continue
        token, _, rest = path.partition(".")
        children = [(n, c) for n, c in module.named_children() if fnmatch.fnmatch(n, token)]
        if not children:
            warnings.warn(
                f"Parallelize plan key {path!r} could not be resolved: no submodule matching "
                f"token {token!r} in {type(module).__name__} (its children: "
                f"{[n for n, _ in module.named_children()][:8]}), skipping this plan entry.",
                stacklevel=2)
            continue
        for _, child in children:
            parallelize_module(child, device_mesh, {rest: style} if rest else style,
                               src_data_rank=src_data_rank)
    return module


def data_tensor_parallel(model, dp: int, tp: int, plan=None):
    """Lay ``model`` out for ``dp`` data-parallel x ``tp`` tensor-parallel ranks.

    Builds the ``(dp, tp)`` mesh (``init_device_mesh``, names ``("dp", "tp")``), applies
    ``plan`` (e.g. ``GPT.tensor_parallel_plan()``) on the ``tp`` dimension when ``tp > 1``
    and lays every other parameter and buffer out as broadcast. Returns ``(mesh,
    data_sbp)``: a batch made global with ``data_sbp`` (``S(0)`` on dp, ``B`` on tp) is split
    across the data-parallel ranks. With ``dp > 1`` the parameters' gradients, partial sums
    over ``dp``, are summed by one :class:`~shardflow.nn.parallel.reducer.Reducer` (kept as
    ``model._dp_reducer``) in buckets during backward, as DDP's are, instead of one all-reduce
    per use of each parameter. Checked before anything is laid out: ``dp * tp`` must be
    the world size. The plan's styles must keep outputs global (``use_local_output=False``)
    for model code written on logical shapes, as GPT's plan does.
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
    if dp > 1:  # the dp gradient sums go through one Reducer's buckets, not one per use
        from ..nn.parallel.reducer import Reducer, partial_dims

        dp_group = mesh["dp"].get_group(0)
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        params = [p for _, p in named]
        model.__dict__["_dp_reducer"] = Reducer(
            params, dp_group, names=[n for n, _ in named], partial_dims=partial_dims(params, dp_group))
    return mesh, (Split(0), broadcast)


class loss_parallel:  # noqa: N801 - PyTorch's name (a context manager)
    """PyTorch's ``loss_parallel()``: cross-entropy on logits split on the class dimension
    without gathering them. Here the sbp rule does that whenever the logits arrive split on
    the class dim, so this context manager only marks the intent (kept for PyTorch code)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

