"""``fully_shard``: FSDP2's eager sharded data parallel (ZeRO stages 2 and 3).

``fully_shard(module)`` shards the parameters that ``module`` owns (those not owned by a
``fully_shard``-ed submodule) along dim 0 over the data-parallel ranks, and changes the
module's class to ``FSDP<Class>`` (a subclass with :class:`FSDPModule`'s methods), as
PyTorch does. Call it on the blocks first, then on the root::

    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)                       # reshard_after_forward=True: ZeRO-3
    opt = optim.AdamW(model.parameters())    # updates the shards

Each rank feeds its own batch (data parallel). At rest every parameter is a global tensor
``Split(0)`` over the mesh (``(Broadcast, Split(0))`` on a 2-D HSDP mesh), and so is its
``.grad`` after backward: optimizers, ``clip_grad_norm_``, LR schedulers and
``state_dict()`` work on the shards unchanged. The optimizers' state of a sharded
parameter (Adam's moments, momentum buffers) is a global tensor with the parameter's
layout, as PyTorch's is a DTensor: the update runs on the local shards, while
``optimizer.state_dict()``, ``dcp.save`` and ``get_optimizer_state_dict`` see the whole
logical tensor (docs/ZERO.md, "Optimizer state and checkpoints").

Algorithm and communication plan (per step, ``Ψ`` = parameter elements)
-------------------------------------------------------------------------
* **Forward**, for each unit in order: its pre-forward hook waits for the unit's
  all-gather (started earlier by the prefetch, else now), swaps every parameter to its
  whole array (a local tensor: the ops run unchanged), and *prefetches*: starts the next
  unit's all-gather (order recorded in the previous forward), so the transfer overlaps this
  unit's compute (a forward hook on each of the unit's submodules polls it: Open MPI
  advances it only inside MPI calls). Its post-forward hook registers a pre-backward hook
  on the outputs and, with ``reshard_after_forward=True`` (ZeRO-3; not for the root, whose backward comes
  first), frees the gathered parameters again. All-gathers: Ψ.
* **Backward**: the pre-backward hook of a unit finishes the reduce-scatter in flight (see
  below) and, for a resharded unit, gathers it again (ZeRO-3: another Ψ). A
  post-accumulate-grad hook on each parameter takes its whole gradient (``.grad``, which
  the parameter owns) and drops ``.grad``; when a unit has all its gradients its
  ``reduce_scatter(avg)`` starts, one per parameter straight from those gradients
  (non-blocking, units in a fixed order on every rank, as DDP's buckets), its gathered
  parameters are freed, and the unit backward reaches next is prefetched (not earlier: while
  a unit computes its gradients the next gathered unit would be one more unit of memory at
  the peak). Every hook calls ``progress()`` on the group (Open MPI advances non-blocking
  collectives only inside MPI calls). Reduce-scatters: Ψ. One unit's are in flight: the
  next unit's pre-backward finishes them (waits, averages over replicas: on an HSDP mesh
  an all-reduce of Ψ/N on the replicate dimension, and gives each parameter its gradient
  shard as ``.grad``), so at most one unit's whole gradients are alive besides the ones
  being computed; the last is finished at the end of backward.
* A unit that is a plain ``nn.Linear`` gets the forward of ``streamed_linear.py``: its
  backward node frees the gathered weight after the input gradient and reduce-scatters the
  weight gradient in row blocks as it computes it (the whole weight gradient never exists;
  the same bytes, one non-blocking collective per block, at most two in flight); the bias
  takes the hook path.
* Total per step: ZeRO-2 (``reshard_after_forward=False``) 2Ψ, ZeRO-3 3Ψ: the ZeRO paper's
  figures. Parameters too small to shard (``shape[0] <`` shard size, scalars) are replicated
  and all-reduced.
* ``set_requires_gradient_sync(False)`` (gradient accumulation): gradients are added into the
  unit's unsharded buffer and not reduced; the next synchronised backward reduces the sum.

* ``mp_policy=MixedPrecisionPolicy(param_dtype, reduce_dtype, ...)``: the all-gathers move
  the shards cast to ``param_dtype`` (half the bytes for bfloat16 over float32) and the
  reduce-scatters run in ``reduce_dtype``; the shards and the optimizer stay in the
  parameters' dtype (mixed_precision.py).
* ``set_modules_to_forward_prefetch`` / ``set_modules_to_backward_prefetch``: the listed
  units' all-gathers start instead of the one the recorded order gives.

At ``fully_shard`` time the parameters and buffers are broadcast from rank 0 (as DDP
does), so every rank shards the same model; a meta-device model has nothing to broadcast:
its shards are meta until ``to_empty`` (then ``reset_parameters()``) or
``load_state_dict(..., assign=True)`` gives them data (docs/ZERO.md, "Meta-device init").

Limits: parameters of one unit share a dtype; modules run in the same order on every
rank (SPMD); a parameter must get a gradient in every backward that runs (as DDP without
``find_unused_parameters``), else the next forward names it; a parameter used outside its
unit's forward (weight tying across units) must live in a common ancestor unit.
"""

from __future__ import annotations

from ... import comm as _comm
from ...autograd import Tensor, is_grad_enabled
from ...backend.meta import is_meta_array
from ...nn.module import Module
from ...nn.parallel.autograd_walk import tensors_in  # outputs nested in lists, tuples, dicts
from ...nn.parallel.reducer import reducers_of
from ..full_state import params_by_index
from ..placement import placement as Placement
from ._param_group import SHARDED, FSDPParamGroup
from .mixed_precision import MixedPrecisionPolicy, cast_inputs_hook, cast_outputs_hook
from .offload import OffloadPolicy
from .streamed_linear import StreamedLinearForward, is_plain_linear

__all__ = ["fully_shard", "FSDPModule"]

_CLASSES: dict[type, type] = {}


class FSDPModule:
    """Methods a ``fully_shard``-ed module gains (PyTorch FSDP2's ``FSDPModule``)."""

    def _get_name(self) -> str:
        # ``print(model)``: FSDP2's ``FSDP<Class>``; the module FSDP1's wrapper holds prints as
        # its own class, as PyTorch's FSDP1 (it has no FSDP class) -- fully_sharded_data_parallel.py
        return self.__dict__.get("_fsdp1_class_name") or type(self).__name__

    def unshard(self, async_op: bool = False):
        """All-gather this module's parameters (whole local tensors until :meth:`reshard`).
        With ``async_op=True`` returns a handle whose ``wait()`` finishes it."""
        st = _state(self)
        st.group_start_unshard("forward")
        handle = _UnshardHandle(st)
        if not async_op:
            handle.wait()
            return None
        return handle

    def reshard(self) -> None:
        """Free the gathered parameters: they become shards (global tensors) again."""
        st = _state(self)
        if st.group is not None:
            st.group.reshard()

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """``False``: the next backwards accumulate unsharded gradients without communicating
        (gradient accumulation); ``True`` (default): reduce-scatter them."""
        for st in _states_below(self, recurse):
            st.sync = bool(requires_gradient_sync)

    def set_reshard_after_forward(self, reshard_after_forward: bool, *, recurse: bool = True) -> None:
        for st in _states_below(self, recurse):
            st.reshard_after_forward = bool(reshard_after_forward)

    def set_modules_to_forward_prefetch(self, modules) -> None:
        """Explicit forward prefetching (PyTorch's name): when this unit's forward starts, start
        the all-gathers of ``modules`` (``fully_shard``-ed modules, in that order) instead of
        the one unit the previous forward's order gives. Results are the same; only when
        the transfers start changes. Every rank must name the same modules (SPMD)."""
        _state(self).forward_prefetch = _prefetch_states(modules, "set_modules_to_forward_prefetch")

    def set_modules_to_backward_prefetch(self, modules) -> None:
        """Explicit backward prefetching (PyTorch's name): when backward reaches this unit,
        start the all-gathers of ``modules`` (``fully_shard``-ed modules; with
        ``reshard_after_forward=True`` they were freed after forward) instead of the one unit
        the reverse forward order gives. Results are the same."""
        _state(self).backward_prefetch = _prefetch_states(modules, "set_modules_to_backward_prefetch")

    def fsdp_stats(self) -> dict:
        """Collectives this unit and the units below it ran so far (counts; ``unshard``: unit
        gathers; bytes as the ZeRO paper counts them: all-gather output, reduce-scatter
        input, all-reduce buffer)."""
        out = {"all_gather": 0, "reduce_scatter": 0, "all_reduce": 0, "unshard": 0, "bytes": {}}
        for st in _states_below(self, True):
            if st.group is None:
                continue
            for k in ("all_gather", "reduce_scatter", "all_reduce", "unshard"):
                out[k] += st.group.stats[k]
            for k, v in st.group.stats["bytes"].items():
                out["bytes"][k] = out["bytes"].get(k, 0) + v
        return out


class _UnshardHandle:
    def __init__(self, st):
        self.st = st

    def wait(self) -> None:
        if self.st.group is not None:
            self.st.group.finish_unshard("forward")


def _prefetch_states(modules, method: str) -> list:
    """The ``_FSDPState`` of each module in ``modules``; refuses (before changing anything) a
    non-list and any module that is not ``fully_shard``-ed, naming its position and type."""
    if isinstance(modules, Module) or not isinstance(modules, list | tuple):
        raise TypeError(f"{method} expects a list of FSDPModules (fully_shard-ed modules), got "
                        f"{type(modules).__name__}; pass e.g. [model.layers[i + 1]]")
    out = []
    for i, m in enumerate(modules):
        st = m.__dict__.get("_fsdp_state") if isinstance(m, Module) else None
        if st is None:
            raise ValueError(
                f"{method}: expects FSDPModule but got {type(m).__name__} at position {i}; only "
                "fully_shard-ed modules have parameters to all-gather early: call fully_shard on "
                "it first, or leave it out of the list")
        out.append(st)
    return out


def _prefetch(states, phase: str) -> None:
    """Start the all-gathers of ``states``' units that are sharded (non-blocking)."""
    for nxt in states:
        if nxt is not None and nxt.group is not None and nxt.group.state == SHARDED:
            nxt.group.start_unshard(phase)
            nxt.group.shard_pg.progress()


def _state(module) -> _FSDPState:
    st = module.__dict__.get("_fsdp_state")
    if st is None:
        raise RuntimeError(f"{type(module).__name__} is not a fully_shard-ed module")
    return st


def _states_below(module, recurse: bool):
    if not recurse:
        return [_state(module)]
    return [m.__dict__["_fsdp_state"] for m in module.modules() if "_fsdp_state" in m.__dict__]


# ---------------------------------------------------------------------------- mesh checks
def _resolve_mesh(mesh, label, module):
    """``(mesh, shard_dim, replicate_dim)``; the default is a 1-D mesh of every rank, of the
    parameters' device type."""
    if mesh is None:
        world = _comm.get_world()
        first = next(iter(module.parameters()), None)
        kind = "cpu" if first is None else first.device.type
        if kind == "meta":  # a model built on the meta device is sharded over the host mesh
            kind = "cpu"     # (PyTorch: the default device's mesh); to_empty gives it memory
        mesh = Placement(kind, list(range(world.size)))
    if not isinstance(mesh, Placement):
        raise TypeError(
            f"fully_shard({label}, mesh=...): expected a shardflow.distributed placement / "
            f"DeviceMesh (init_device_mesh('cpu', (N,))), got {type(mesh).__name__}")
    if mesh.ndim == 1:
        return mesh, 0, None
    if mesh.ndim == 2:
        names = mesh.mesh_dim_names
        if names is not None and tuple(names) != ("dp_replicate", "dp_shard"):
            raise ValueError(
                f"fully_shard({label}): a 2-D mesh is hybrid sharding (HSDP): dimension 0 "
                f"replicates, dimension 1 shards; its dimensions must be named "
                f"('dp_replicate', 'dp_shard'), got {tuple(names)}. Build it with "
                "init_device_mesh('cpu', (replicas, shards), mesh_dim_names=('dp_replicate', "
                "'dp_shard')); for tensor parallelism plus FSDP pass mesh['dp'] (a 1-D mesh)")
        return mesh, 1, 0
    raise ValueError(
        f"fully_shard({label}): mesh has {mesh.ndim} dimensions {mesh.shape}; expected a 1-D "
        "data-parallel mesh (FSDP) or a 2-D ('dp_replicate', 'dp_shard') mesh (HSDP)")


# ---------------------------------------------------------------------------- the state
class _FSDPState:
    """Per ``fully_shard``-ed module: its parameter group and its hooks."""

    def __init__(self, module, mesh, shard_dim, rep_dim, reshard_after_forward, offload, label):
        self.module = module
        self.mesh = mesh
        self.shard_dim, self.rep_dim = shard_dim, rep_dim
        self.reshard_after_forward = reshard_after_forward
        self.offload = offload
        self.label = label
        self.sync = True
        self.root = None  # the _Root this unit belongs to, set at the root's first forward
        self.group = None
        self.path = ""  # dotted name under the root (set at the root's first forward)
        self.forward_prefetch = None  # explicit prefetch lists (set_modules_to_*_prefetch)
        self.backward_prefetch = None
        self.linear_calls = 0  # FSDPLinear forwards with grad in this step (streamed_linear.py)
        self.own_hooks = {}  # id(param) -> (post-accumulate, grad) hooks fully_shard made

    def group_start_unshard(self, phase):
        if self.group is not None:
            self.group.start_unshard(phase)
            self.group.shard_pg.progress()


class _Root:
    """The outermost ``fully_shard``-ed module's view of every unit below it."""

    def __init__(self, root_state, states):
        self.root_state = root_state
        self.states = states
        self.order: list = []  # units in the order their forward ran, this step
        self.prev_order: list = []  # ... in the previous step (what prefetch follows)
        self.backward_started = False
        self.reached: set = set()  # ids of the units whose pre-backward ran in this backward
        self.queue: list = []  # units in reduce-scatter launch order
        self.next_launch = 0
        self.next_finish = 0
        self.expect_backward = False

    # -- forward -------------------------------------------------------------------------
    def begin_forward(self) -> None:
        self._check_previous_backward()
        if self.order:
            self.prev_order = self.order
        self.order = []
        self.queue = []
        self.next_launch = 0
        self.next_finish = 0
        self.backward_started = False
        self.reached = set()
        for st in self.states:
            st.linear_calls = 0

    def _check_previous_backward(self) -> None:
        if not self.expect_backward:
            return
        touched = [st for st in self.states if st.group is not None
                   and st.group.pending != len(st.group.trainable)]
        if not touched:  # forward without backward (e.g. an eval pass): nothing owed
            self.expect_backward = False
            for st in self.states:
                if st.group is not None:
                    st.group.drop_stash()
            return
        missing = [f"{st.path}.{nm}" if st.path else nm
                   for st in self.states if st.group is not None for nm in st.group.missing()]
        for st in self.states:
            if st.group is not None:
                st.group.reset_grad_state()
        raise RuntimeError(
            "fully_shard: the previous backward did not produce a gradient for every "
            f"parameter, so its gradients were never reduced: missing {', '.join(missing)} "
            f"({len(missing)} parameter(s)). Every parameter of a fully_shard-ed model must be "
            "used in producing the loss in each step; freeze unused ones (requires_grad_(False)) "
            "before fully_shard, or move them out of the model")

    def next_after(self, st, order):
        if st in order:
            i = order.index(st)
            for nxt in order[i + 1:]:
                if nxt is not st:
                    return nxt
        return None

    # -- backward ------------------------------------------------------------------------
    @staticmethod
    def _dedup(seq) -> list:
        return list({id(st): st for st in seq}.values())  # first occurrences, in order

    def backward_order(self) -> list:
        """Units in the order backward reaches them (their pre-backward hooks fire): the
        root first (its output is the loss), then the others in reverse forward order."""
        return self._dedup(self.order[:1] + self.order[:0:-1])

    def start_backward(self) -> None:
        """The reduce-scatter launch order: reverse forward order, the root last (its
        parameters, used first in forward, get their gradients last)."""
        if self.backward_started:
            return
        self.backward_started = True
        self.queue = [st for st in self._dedup(self.order[::-1])
                      if st.group is not None and st.group.trainable]
        self.next_launch = 0
        self.next_finish = 0

    def unit_ready(self, st) -> None:
        """A unit delivered all its gradients: launch reduce-scatters in queue order. One is in
        flight until backward reaches the next unit (its pre-backward calls
        ``finish_launched``; the transfer overlaps the ops in between), so whole gradients
        are freed as backward goes instead of living until its end."""
        self.start_backward()
        q = self.queue
        k = self.next_launch
        while k < len(q) and q[k].group.pending == 0:
            u = q[k]
            if u.sync:
                u.group.launch_reduce()
            u.group.reshard()
            k += 1
        self.next_launch = k
        if k == len(q):
            self.finalize()

    def unit_complete(self, st) -> None:
        """``st`` delivered its last gradient: launch (``unit_ready``), then prefetch the unit
        backward reaches next, only one it has not reached yet: one it passed (the root's
        gradients come last) would be gathered with the shards before the optimizer step."""
        self.unit_ready(st)  # reduce-scatters launched, gathered parameters freed
        nxt = self.next_after(st, self.backward_order())
        if st.backward_prefetch is None and nxt is not None and id(nxt) not in self.reached:
            _prefetch([nxt], "backward")

    def finish_launched(self) -> None:
        """Finish every launched reduce-scatter (before a new unit computes its gradients,
        so at most one unit's whole gradients are alive besides the ones being computed)."""
        while self.next_finish < self.next_launch:
            self._finish(self.queue[self.next_finish])
            self.next_finish += 1

    def _finish(self, u) -> None:
        if u.sync:
            u.group.finish_reduce()
        else:  # no gradient sync: keep the summed gradients for the next synchronised step
            u.group.pending = len(u.group.trainable)
            u.group.ready = {id(p): False for p in u.group.trainable}

    def finalize(self) -> None:
        for u in self.queue[self.next_finish:]:
            self._finish(u)
        self.expect_backward = False
        self.queue = []
        self.next_launch = 0
        self.next_finish = 0


# ---------------------------------------------------------------------------- hooks
def _pre_forward(module, args):
    st = module.__dict__["_fsdp_state"]
    if st.root is None:
        _lazy_init(st)
    root = st.root
    if st is root.root_state:
        root.begin_forward()
    root.order.append(st)
    if st.group is not None:
        st.group.finish_unshard("forward")
    if st.forward_prefetch is not None:
        _prefetch(st.forward_prefetch, "forward")
    else:
        _prefetch([root.next_after(st, root.prev_order)], "forward")
    if is_grad_enabled() and st.group is not None and st.group.trainable:
        root.expect_backward = True
    return None


def _post_forward(module, args, output):
    st = module.__dict__["_fsdp_state"]
    root = st.root
    grad = is_grad_enabled()
    if grad and st.group is not None and st.group.trainable:
        outs = [t for t in tensors_in(output) if t.requires_grad]
        if outs:
            fired = [False]

            def pre_backward(g, st=st, fired=fired):
                if not fired[0]:
                    fired[0] = True
                    _pre_backward(st)
                return None

            for t in outs:
                t.register_hook(pre_backward)
    if st.group is not None and (not grad or (st.reshard_after_forward and st is not root.root_state)):
        st.group.reshard()
    return None


def _pre_backward(st) -> None:
    root = st.root
    root.start_backward()
    root.reached.add(id(st))
    # the reduce-scatter in flight is finished before this unit's gradients are computed, so
    # its whole gradients (and the collective's buffers) are gone before new ones are made
    root.finish_launched()
    g = st.group
    if g is not None:
        g.finish_unshard("backward")
        g.stash_grads()  # now, not at the forward (see stash_grads)
        g.shard_pg.progress()
    if st.backward_prefetch is not None:
        _prefetch(st.backward_prefetch, "backward")
    elif g is None or not g.trainable or st is root.root_state:
        # no gradients to wait for, or the root's (its tied embedding's gradient comes last):
        # prefetch now
        _prefetch([root.next_after(st, root.backward_order())], "backward")
    # else the next unit is prefetched once this one's gradients are in (_make_grad_hook), not
    # now: while this unit computes its gradients, the next unit's gathered parameters would
    # be one more unit of memory at the peak of backward (ZeRO-3's peak: docs/ZERO.md)


def _make_grad_hook(st):
    def hook(p):
        g = st.group
        if p.grad is None or p.grad._spec is not None:
            return
        if g.pending == len(g.trainable):  # a unit starts receiving gradients: the one in
            st.root.finish_launched()        # flight is done (usually already, at pre-backward)
        done = g.take_grad(p)
        g.shard_pg.progress()
        if done:
            st.root.unit_complete(st)

    return hook


def _lazy_init(st) -> None:
    """The first forward of the outermost unit: it becomes the root of every unit below."""
    states = [m.__dict__["_fsdp_state"] for m in st.module.modules() if "_fsdp_state" in m.__dict__]
    root = _Root(st, states)
    paths = {id(m): n for n, m in st.module.named_modules()}
    for s in states:
        s.path = paths.get(id(s.module), s.label)
        if s.root is not None and s.root is not root:
            continue
        s.root = root
    _check_not_ddp(st.module)


def _check_not_ddp(module) -> None:
    for p in module.parameters():
        if reducers_of(p):  # a gradient reducer's hooks: DistributedDataParallel's
            raise RuntimeError(
                "fully_shard: this model's parameters are also managed by "
                "DistributedDataParallel; the two would reduce every gradient twice. Use one: "
                "fully_shard already averages gradients over the data-parallel ranks (drop the "
                "DDP wrapper), or keep DDP and shard only the optimizer state with "
                "ZeroRedundancyOptimizer (ZeRO-1)")


# ---------------------------------------------------------------------------- fully_shard
def fully_shard(module, *, mesh=None, reshard_after_forward: bool = True,
                shard_placement_fn=None, mp_policy=None, offload_policy: OffloadPolicy | None = None,
                ignored_params=None, dp_mesh_dims=None):
    """Shard ``module``'s parameters over the data-parallel ``mesh``; see the module docstring.

    ``reshard_after_forward=True`` frees gathered parameters after each unit's forward and
    gathers them again in backward (ZeRO-3); ``False`` keeps them until the unit's
    gradients are reduced (ZeRO-2: one all-gather per step). ``offload_policy``:
    :class:`CPUOffloadPolicy` keeps shards and optimizer state in host memory (on the CPU
    backend they already are: a no-op with the same results). ``mp_policy``:
    :class:`MixedPrecisionPolicy` (gathered parameters in ``param_dtype``, gradients reduced
    in ``reduce_dtype``, inputs/outputs cast; see mixed_precision.py).
    ``shard_placement_fn`` is not supported (dim-0 shards).
    Returns ``module`` (its class becomes ``FSDP<Class>``).
    """
    if dp_mesh_dims is not None:  # torch 2.13's HSDP dims spec; a 2-D mesh is (replicate, shard) here
        raise NotImplementedError("fully_shard(dp_mesh_dims=...) is not supported; pass a 1-D mesh "
                                  "(shard) or a 2-D mesh (replicate, shard) for HSDP")
    from ...nn.parallel import DistributedDataParallel

    label = type(module).__name__
    if not isinstance(module, Module):
        raise TypeError(f"fully_shard expects an nn.Module, got {label}")
    if isinstance(module, DistributedDataParallel) or any(
            isinstance(m, DistributedDataParallel) for m in module.modules()):
        raise RuntimeError(
            "fully_shard: the module is (or contains) a DistributedDataParallel; fully_shard "
            "replaces DDP (it averages gradients itself). Pass the plain model: "
            "fully_shard(model) instead of fully_shard(DDP(model))")
    if "_fsdp_state" in module.__dict__:
        raise RuntimeError(f"fully_shard: {label} is already fully_shard-ed; call it once per module")
    if shard_placement_fn is not None:
        raise NotImplementedError(
            "fully_shard: shard_placement_fn is not supported; parameters are sharded on dim 0")
    if mp_policy is None:
        mp_policy = MixedPrecisionPolicy()
    if not isinstance(mp_policy, MixedPrecisionPolicy):
        raise TypeError(f"mp_policy must be a MixedPrecisionPolicy, got {type(mp_policy).__name__}")
    mp = mp_policy.numpy_dtypes(label)  # checked before any state changes
    if offload_policy is not None and not isinstance(offload_policy, OffloadPolicy):
        raise TypeError(f"offload_policy must be an OffloadPolicy / CPUOffloadPolicy, got "
                        f"{type(offload_policy).__name__}")
    mesh, shard_dim, rep_dim = _resolve_mesh(mesh, label, module)
    st = _FSDPState(module, mesh, shard_dim, rep_dim, bool(reshard_after_forward),
                    offload_policy or OffloadPolicy(), label)
    # parameters this unit owns: not under a fully_shard-ed submodule, not ignored
    ignored = {id(p) for p in (ignored_params or ())}
    owned_elsewhere = set()
    for m in module.modules():
        if m is not module and "_fsdp_state" in m.__dict__:
            owned_elsewhere.update(id(p) for p in m.parameters())
    params, names, seen = [], [], set()
    for name, p in module.named_parameters():
        if id(p) in owned_elsewhere or id(p) in ignored or id(p) in seen:
            continue
        if p._spec is not None:
            if mesh.size() == 1:
                # a one-rank data-parallel mesh (PyTorch's 2-D FSDP + TP example on (dp=1,
                # tp=N)): sharding over one rank is the identity and there is no gradient to
                # reduce, so a parameter already laid out (tensor parallel) stays as it is
                seen.add(id(p))
                continue
            raise NotImplementedError(
                f"fully_shard({label}): parameter {name} is already a global tensor laid out as "
                f"{p._spec.sbp}, and sharding it again over a data-parallel mesh of "
                f"{mesh.size()} ranks (PyTorch's 2-D FSDP + tensor parallelism) is not "
                "supported; apply fully_shard before laying out, use a data-parallel mesh of "
                "one rank, or use data parallelism of global tensors (docs/GLOBAL.md)")
        seen.add(id(p))
        params.append(p)
        names.append(name)
    _verify_same_unit(params, names, label)
    _broadcast_from_rank0(params, module, owned_elsewhere)
    users_hooked = {id(p) for p in params if p._post_hooks or p._hooks}
    if params:
        st.offload.check(params, label)
        st.group = FSDPParamGroup(params, names, mesh, shard_dim, rep_dim, label,
                                  param_dtype=mp["param_dtype"], reduce_dtype=mp["reduce_dtype"])
        hook = _make_grad_hook(st)
        for p in st.group.trainable:
            p.register_post_accumulate_grad_hook(hook)
        # the hooks fully_shard put on each parameter: any other (the user's, before or after
        # this call) wants the parameter's whole gradient, so its Linear does not stream it
        # (streamed_linear.py)
        st.own_hooks = {id(p): (len(p._post_hooks or ()), len(p._hooks or ())) for p in params
                        if id(p) not in users_hooked}
        _register_progress_hooks(module, st.group.shard_pg)
    module.__dict__["_fsdp_state"] = st
    module.register_forward_pre_hook(_pre_forward)
    module.register_forward_hook(_post_forward)
    if mp_policy.cast_forward_inputs and mp["param_dtype"] is not None:
        module.register_forward_pre_hook(cast_inputs_hook(mp_policy.param_dtype), with_kwargs=True)
    if mp["output_dtype"] is not None:
        module.register_forward_hook(cast_outputs_hook(mp_policy.output_dtype))
    cls = type(module)
    if not isinstance(module, FSDPModule):
        new = _CLASSES.get(cls)
        if new is None:
            # a plain nn.Linear unit streams its weight gradient (streamed_linear.py)
            bases = (StreamedLinearForward, FSDPModule, cls) if is_plain_linear(cls) else (FSDPModule, cls)
            new = _CLASSES[cls] = type(f"FSDP{cls.__name__}", bases, {})
        module.__class__ = new
    if _comm.get_world().size > 1:  # data loaders shard their data by rank, as under DDP
        _comm.set_data_parallel(True)
    return module


def _register_progress_hooks(module, pg) -> None:
    """A forward hook on each submodule of the unit (not those of nested units) that drives
    MPI progress: Open MPI advances the prefetched all-gather only inside MPI calls, so the
    unit's compute polls it between layers, as DDP's gradient hooks do in backward."""

    def poll(mod, args, output):
        pg.progress()

    stack = list(module.children())
    while stack:
        m = stack.pop()
        if "_fsdp_state" in m.__dict__:
            continue
        m.register_forward_hook(poll)
        stack.extend(m.children())


def _verify_same_unit(params, names, label) -> None:
    """Raise on every rank, before anything is broadcast, if the ranks' units differ (the
    check DDP makes, ``_verify_same_model``): one small all-gather of each rank's parameter
    names, shapes and dtypes. Without it the first broadcast of a parameter of another shape
    raised a bare collective mismatch naming no parameter."""
    world = _comm.get_world()
    if world.size == 1:
        return
    mine = [(n, tuple(p.array.shape), str(p.array.dtype)) for n, p in zip(names, params)]
    every = world.all_gather_object(mine)
    fix = ("; build the same model on every rank before fully_shard (the same constructor "
           "arguments; code that depends on the rank must not change the parameters first)")
    for r, theirs in enumerate(every):
        if r == world.rank:
            continue
        if len(theirs) != len(mine):
            raise RuntimeError(
                f"fully_shard({label}) expects the same model on every rank, but rank "
                f"{world.rank} has {len(mine)} parameters ({[n for n, *_ in mine][:6]}) while "
                f"rank {r} has {len(theirs)} ({[n for n, *_ in theirs][:6]}){fix}")
        for a, b in zip(mine, theirs):
            if a != b:
                raise RuntimeError(
                    f"fully_shard({label}) expects the same model on every rank, but parameter "
                    f"{a[0]} has shape {list(a[1])} ({a[2]}) on rank {world.rank} and rank {r} "
                    f"has {b[0]} of shape {list(b[1])} ({b[2]}){fix}")


def _broadcast_from_rank0(params, module, owned_elsewhere) -> None:
    world = _comm.get_world()
    if world.size == 1:
        return
    for p in params:
        if is_meta_array(p.array):  # no data yet: to_empty + reset_parameters (or a load) gives it
            continue
        world.broadcast(p.array, 0)
        p._version_counter[0] += 1
    for b in module.buffers():
        if b is not None and not is_meta_array(b.array):
            world.broadcast(b.array, 0)


def sharded_optimizer_state_dict(optimizer) -> dict:
    """``optimizer.state_dict()`` with every state tensor of a sharded parameter a global
    tensor laid out like it (no communication); for sharded checkpoints. The optimizers
    already make such state global (``Optimizer._state_like``), so this only wraps plain
    shard-shaped state tensors made otherwise (kept for scripts written before)."""
    from ...autograd import _wrap

    sd = optimizer.state_dict()
    params = params_by_index(optimizer)
    state = {}
    for i, st in sd["state"].items():
        p = params[i] if isinstance(i, int) and i < len(params) else None
        spec = None if p is None else p._spec
        if spec is None:
            state[i] = st
            continue
        state[i] = {}
        for k, v in st.items():
            if (isinstance(v, Tensor) and v._spec is None and v.array.ndim
                    and v.array.shape == p.array.shape):
                t = _wrap(v.array)
                t._spec = spec
                v = t
            state[i][k] = v
    return {"state": state, "param_groups": sd["param_groups"]}

