"""``FullyShardedDataParallel``: PyTorch's FSDP1 API as a wrapper module over ``fully_shard``.

``FSDP(module, auto_wrap_policy=..., sharding_strategy=..., mixed_precision=...)`` does what
PyTorch's constructor does, with FSDP2's machinery underneath (fully_shard.py):

1. checks every argument (raising before anything changes);
2. materialises a meta-device ``module`` (``param_init_fn(m)`` on each submodule, else
   ``to_empty`` + ``reset_parameters``), moves it to ``device_id`` when that is an
   accelerator, casts its floating buffers to ``MixedPrecision.buffer_dtype``;
3. applies ``auto_wrap_policy`` (wrap.py): each matching submodule is replaced by its own
   ``FullyShardedDataParallel`` (children first), so ``model.layers[0]`` is an FSDP unit
   whose ``_fsdp_wrapped_module`` is the block, as in PyTorch;
4. ``fully_shard(module, mesh, reshard_after_forward, mp_policy, offload_policy,
   ignored_params)`` on the wrapped module: it owns the parameters no nested unit owns,
   broadcasts them from rank 0 (so ``sync_module_states=True`` holds: a model built with
   real weights on rank 0 only gets rank 0's weights everywhere) and shards them.

Sharding strategies (``ShardingStrategy``) map onto fully_shard's settings:

========================  =====================================================
FULL_SHARD (default)      1-D mesh of the group, ``reshard_after_forward=True`` (ZeRO-3)
SHARD_GRAD_OP             1-D mesh, ``reshard_after_forward=False`` (ZeRO-2)
NO_SHARD                  2-D mesh (world, 1): shards of one rank are whole parameters,
                          gradients all-reduced (averaged) over the replicas (DDP)
HYBRID_SHARD              the 2-D ``device_mesh`` (replicate, shard), or (1, world) (every
                          rank on one host is one node); ``reshard_after_forward=True``
_HYBRID_SHARD_ZERO2       the same mesh, ``reshard_after_forward=False``
========================  =====================================================

Communication is fully_shard's (per step: ZeRO-3 3Ψ, ZeRO-2 2Ψ; NO_SHARD one all-reduce of
Ψ). ``no_sync()`` is ``set_requires_gradient_sync(False)`` on every unit below: gradients are
accumulated unsharded and the next synchronised backward reduces their sum.

Parameters: ``use_orig_params=True`` semantics always. ``model.parameters()`` are the original
parameters (global tensors ``S(0)`` at rest, their ``.grad`` too), named with
``_fsdp_wrapped_module.`` in the path as PyTorch's ``use_orig_params=True`` names them
(inside ``summon_full_params`` the prefix is removed). PyTorch with ``use_orig_params=False``
(its default) shows one ``_flat_param`` per unit instead; state dicts do not depend on it.
State dicts: see ``_fsdp1_state.py``. ``print(model)`` shows each wrapped module as its own
class (``(_fsdp_wrapped_module): Net(``), as PyTorch's FSDP1, not fully_shard's ``FSDPNet``.
"""

from __future__ import annotations

import contextlib
import functools

from ... import comm as _comm
from ...autograd import _wrap, no_grad
from ...backend.dtypes import float32
from ...backend.meta import is_meta_array
from ...nn.module import Module
from ..full_state import _full_copy
from ..placement import placement as Placement
from . import _fsdp1_state as _sd
from .api import (  # all of them: scripts import them from this module too (PyTorch's path)
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    OptimStateDictConfig,
    OptimStateKeyType,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictSettings,
    StateDictType,
)
from .fully_shard import fully_shard
from .mixed_precision import MixedPrecisionPolicy, _cast_floating
from .offload import CPUOffloadPolicy
from .wrap import (
    _check_policy,
    _module_wrap_policy,
    _or_policy,
    _Policy,
    _post_order_apply,
    _recursive_wrap,
)

__all__ = ["FullyShardedDataParallel", "OptimStateKeyType"]
_REEXPORTED = (LocalOptimStateDictConfig, LocalStateDictConfig, OptimStateDictConfig, ShardedOptimStateDictConfig,
               ShardedStateDictConfig, StateDictConfig, StateDictSettings)

FSDP_WRAPPED_MODULE = "_fsdp_wrapped_module"
FSDP_PREFIX = FSDP_WRAPPED_MODULE + "."

_RESHARD_AFTER_FORWARD = {
    ShardingStrategy.FULL_SHARD: True,
    ShardingStrategy.SHARD_GRAD_OP: False,
    ShardingStrategy.NO_SHARD: False,
    ShardingStrategy.HYBRID_SHARD: True,
    ShardingStrategy._HYBRID_SHARD_ZERO2: False,
}


def _check_enum(value, enum, name, default=None):
    if value is None:
        return default
    if not isinstance(value, enum):
        choices = ", ".join(f"{enum.__name__}.{m.name}" for m in enum)
        raise TypeError(f"FullyShardedDataParallel: {name} must be a {enum.__name__} ({choices}), "
                        f"got {value!r} ({type(value).__name__})")
    return value


def _check_instance(value, cls, name):
    if value is not None and not isinstance(value, cls):
        raise TypeError(f"FullyShardedDataParallel: {name} must be a {cls.__name__} (or None), got "
                        f"{value!r} ({type(value).__name__}); e.g. {name}={cls.__name__}()")


def _param_device_type(module) -> str:
    first = next(iter(module.parameters()), None)
    kind = "cpu" if first is None else first.device.type
    return "cpu" if kind == "meta" else kind


def _device_of(device_id):
    if device_id is None:
        return None
    from ...backend.device import device as _device

    if isinstance(device_id, int):
        return _device("cuda", device_id)
    return _device(device_id)


def _resolve_mesh(strategy, process_group, device_mesh, device_type):
    """The placement fully_shard shards over (see the module docstring's table)."""
    if process_group is not None and device_mesh is not None:
        raise ValueError("Cannot pass both process_group and device_mesh at the same time. "
                         "Please just pass only one of them.")
    hybrid = strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)
    if device_mesh is not None:
        if not isinstance(device_mesh, Placement):
            raise TypeError(f"FullyShardedDataParallel: device_mesh must be a DeviceMesh "
                            f"(init_device_mesh(...)), got {type(device_mesh).__name__}")
        if hybrid and device_mesh.ndim != 2:
            raise ValueError(f"FullyShardedDataParallel: {strategy} needs a 2-D device_mesh "
                             f"(replicate, shard), got {device_mesh.ndim} dimension(s)")
        if not hybrid and device_mesh.ndim != 1:
            raise ValueError(f"FullyShardedDataParallel: {strategy} takes a 1-D device_mesh, got "
                             f"{device_mesh.ndim} dimensions; a 2-D mesh is for HYBRID_SHARD")
        if hybrid:
            return Placement(device_mesh.type, device_mesh.ranks.tolist(),
                             mesh_dim_names=("dp_replicate", "dp_shard"))
        return device_mesh
    world = _comm.get_world()
    ranks = list(range(world.size))
    if process_group is not None:
        if isinstance(process_group, tuple | list):
            raise NotImplementedError(
                "FullyShardedDataParallel: a (intra-node, inter-node) process_group pair for "
                "HYBRID_SHARD is not supported; pass device_mesh=init_device_mesh(device, "
                "(replicas, shards), mesh_dim_names=('dp_replicate', 'dp_shard')) instead")
        from .. import get_process_group_ranks

        ranks = list(get_process_group_ranks(process_group))
    if strategy == ShardingStrategy.NO_SHARD:
        return Placement(device_type, [[r] for r in ranks], mesh_dim_names=("dp_replicate", "dp_shard"))
    if hybrid:
        return Placement(device_type, [ranks], mesh_dim_names=("dp_replicate", "dp_shard"))
    return Placement(device_type, ranks)


def _ignored(module, ignored_modules, ignored_states):
    """``(ignored modules, ignored parameters)`` from PyTorch's two spellings."""
    if ignored_modules is not None and ignored_states is not None:
        raise ValueError("Cannot pass both ignored_modules and ignored_states at the same time. "
                         "Please just pass ignored_states.")
    mods, params = set(), []
    for x in list(ignored_modules or ()) + list(ignored_states or ()):
        if isinstance(x, Module):
            if isinstance(x, FullyShardedDataParallel):
                raise ValueError("FullyShardedDataParallel: ignored_modules must not be FSDP modules")
            mods.update(x.modules())
        elif hasattr(x, "requires_grad") and hasattr(x, "array"):
            params.append(x)
        else:
            raise TypeError(f"FullyShardedDataParallel: ignored_modules/ignored_states hold modules "
                            f"or parameters, got {type(x).__name__}")
    for m in mods:
        params.extend(m.parameters())
    return mods, params


def _materialize_meta(module, param_init_fn, device, ignored_mods) -> None:
    """A module with meta parameters/buffers gets memory (PyTorch's deferred init):
    ``param_init_fn(m)`` for each submodule, else ``to_empty`` + ``reset_parameters``."""
    arrays = [t.array for t in list(module.parameters()) + list(module.buffers())]
    if not any(is_meta_array(a) for a in arrays):
        return
    mods = [m for m in module.modules() if m not in ignored_mods]
    if param_init_fn is not None:
        if not callable(param_init_fn):
            raise TypeError(f"param_init_fn must be callable (module) -> None, got "
                            f"{type(param_init_fn).__name__}")
        for m in mods:
            param_init_fn(m)
        return
    for m in mods:
        m.to_empty(device=device or "cpu", recurse=False)
    with no_grad():
        for m in mods:
            if callable(getattr(m, "reset_parameters", None)):
                m.reset_parameters()


def _cast_buffers(module, mp: MixedPrecision) -> None:
    """This unit's floating buffers (not those of nested units, which cast their own) in
    ``mp.buffer_dtype``."""
    if mp is None or mp.buffer_dtype is None:
        return
    stack = [module]
    while stack:
        m = stack.pop()
        for name, b in list(m._buffers.items()):
            if b is not None and b.is_floating_point() and b.dtype != mp.buffer_dtype:
                m._buffers[name] = b.to(mp.buffer_dtype)
        stack.extend(c for c in m.children() if not isinstance(c, FullyShardedDataParallel))


def _override_mixed_precision(module, classes, ignored_mods) -> None:
    """PyTorch's treatment of ``MixedPrecision._module_classes_to_ignore`` under auto-wrap:
    each such module becomes its own unit without mixed precision (``_wrap_overrides``),
    computing in float32 (inputs cast up, outputs back to the input's dtype)."""
    classes = tuple(set(classes or ()))
    if not classes:
        return
    for m in module.modules():
        if m in ignored_mods or not isinstance(m, classes):
            continue
        m._wrap_overrides = {"mixed_precision": None}
        seen = {}

        def up(mod, args, seen=seen):
            for a in args:
                if hasattr(a, "is_floating_point") and a.is_floating_point():
                    seen["dtype"] = a.dtype
                    break
            return _cast_floating(tuple(args), float32)

        def down(mod, args, output, seen=seen):
            return _cast_floating(output, seen["dtype"]) if "dtype" in seen else output

        m.register_forward_pre_hook(up)
        m.register_forward_hook(down)


class FullyShardedDataParallel(Module):
    """PyTorch's FSDP1 wrapper (see the module docstring); ``FSDP`` for short."""

    # how _fsdp1_state.py finds the units without importing this module (no import circle)
    _fsdp1_unit = True

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None, ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False, ignored_states=None, device_mesh=None):
        # -- every check before anything changes
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel expects an nn.Module, got {type(module).__name__}")
        if isinstance(module, FullyShardedDataParallel):
            raise ValueError("FullyShardedDataParallel: the module is already an FSDP module; wrap "
                             "the plain model once")
        strategy = _check_enum(sharding_strategy, ShardingStrategy, "sharding_strategy",
                               ShardingStrategy.FULL_SHARD)
        _check_enum(backward_prefetch, BackwardPrefetch, "backward_prefetch")
        _check_instance(cpu_offload, CPUOffload, "cpu_offload")
        _check_instance(mixed_precision, MixedPrecision, "mixed_precision")
        _check_policy(auto_wrap_policy)
        ignored_mods, ignored_params = _ignored(module, ignored_modules, ignored_states)
        device = _device_of(device_id)
        kind = device.type if device is not None and device.type != "cpu" else _param_device_type(module)
        mesh = _resolve_mesh(strategy, process_group, device_mesh, kind)
        mp_policy = MixedPrecisionPolicy()
        if mixed_precision is not None:
            mp_policy = MixedPrecisionPolicy(param_dtype=mixed_precision.param_dtype,
                                             reduce_dtype=mixed_precision.reduce_dtype,
                                             cast_forward_inputs=mixed_precision.cast_forward_inputs)
            mp_policy.numpy_dtypes(type(module).__name__)  # refuses a bad dtype now
        super().__init__()
        # -- the module: memory, device, buffers, nested units
        _materialize_meta(module, param_init_fn, device, ignored_mods)
        if device is not None and device.type != "cpu":
            module.to(device)
        if auto_wrap_policy is not None:
            kwargs = dict(process_group=process_group, sharding_strategy=strategy, cpu_offload=cpu_offload,
                          backward_prefetch=backward_prefetch, mixed_precision=mixed_precision,
                          device_id=device_id, sync_module_states=sync_module_states,
                          forward_prefetch=forward_prefetch, limit_all_gathers=limit_all_gathers,
                          use_orig_params=use_orig_params, device_mesh=device_mesh,
                          ignored_states=list(ignored_params) or None)  # stay local in nested units too
            keep_fp32 = () if mixed_precision is None else tuple(mixed_precision._module_classes_to_ignore or ())
            if isinstance(auto_wrap_policy, _Policy):
                targets = auto_wrap_policy._run_policy(module, ignored_mods, kwargs)
                for m in module.modules():
                    if keep_fp32 and m not in ignored_mods and isinstance(m, keep_fp32):
                        targets[m] = {**targets.get(m, kwargs), "mixed_precision": None}
                targets.pop(module, None)  # the root is this wrapper's own unit
                _override_mixed_precision(module, keep_fp32, ignored_mods)
                _post_order_apply(module, targets, FullyShardedDataParallel)
            else:
                if keep_fp32:
                    auto_wrap_policy = functools.partial(_or_policy, policies=[
                        auto_wrap_policy, functools.partial(_module_wrap_policy, module_classes=keep_fp32)])
                    _override_mixed_precision(module, keep_fp32, ignored_mods)
                _recursive_wrap(module, auto_wrap_policy, FullyShardedDataParallel, ignored_mods,
                                ignored_params, only_wrap_children=True, **kwargs)
        _cast_buffers(module, mixed_precision)
        self._fsdp_wrapped_module = module
        module.__dict__["_fsdp1_class_name"] = type(module).__name__  # print(model): `Net(`, not `FSDPNet(`
        fully_shard(module, mesh=mesh, reshard_after_forward=_RESHARD_AFTER_FORWARD[strategy],
                    mp_policy=mp_policy,
                    offload_policy=CPUOffloadPolicy() if cpu_offload is not None and cpu_offload.offload_params else None,
                    ignored_params=ignored_params)
        d = self.__dict__
        d["sharding_strategy"] = strategy
        d["mixed_precision"] = mixed_precision
        d["cpu_offload"] = cpu_offload or CPUOffload()
        d["backward_prefetch"] = backward_prefetch
        d["forward_prefetch"] = bool(forward_prefetch)
        d["limit_all_gathers"] = bool(limit_all_gathers)
        d["_use_orig_params"] = bool(use_orig_params)
        d["_is_root"] = True
        d["_in_summon"] = False
        d["_state_dict_type"] = StateDictType.FULL_STATE_DICT
        d["_state_dict_config"] = FullStateDictConfig()
        d["_optim_state_dict_config"] = FullOptimStateDictConfig()
        for m in module.modules():
            if isinstance(m, FullyShardedDataParallel):
                m.__dict__["_is_root"] = False
        self.register_state_dict_post_hook(_sd.state_dict_post_hook)
        self._register_load_state_dict_pre_hook(_sd.load_state_dict_pre_hook, with_module=True)

    # -- module access ------------------------------------------------------------------
    @property
    def module(self) -> Module:
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == FSDP_WRAPPED_MODULE:
                raise
            return getattr(self._fsdp_wrapped_module, name)

    def __getitem__(self, key):
        return self._fsdp_wrapped_module.__getitem__(key)

    def check_is_root(self) -> bool:
        return self._is_root

    @staticmethod
    def fsdp_modules(module, root_only: bool = False) -> list:
        """The FSDP modules in ``module``'s tree (``root_only``: the outermost ones)."""
        return [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)
                and (not root_only or m._is_root)]

    def forward(self, *args, **kwargs):
        mp = self.mixed_precision
        if self._is_root and mp is not None and mp.cast_root_forward_inputs and mp.param_dtype is not None:
            args, kwargs = _cast_floating(tuple(args), mp.param_dtype), _cast_floating(dict(kwargs), mp.param_dtype)
        return self._fsdp_wrapped_module(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        """Names with ``_fsdp_wrapped_module.`` removed inside ``summon_full_params``."""
        for name, p in super().named_parameters(*args, **kwargs):
            yield (name.replace(FSDP_PREFIX, "") if self._in_summon else name), p

    def named_buffers(self, *args, **kwargs):
        for name, b in super().named_buffers(*args, **kwargs):
            yield (name.replace(FSDP_PREFIX, "") if self._in_summon else name), b

    def apply(self, fn):
        """``fn`` on every module, with the parameters gathered (and written back), as PyTorch."""
        ctx = (FullyShardedDataParallel.summon_full_params(self, writeback=True)
               if self._is_root else contextlib.nullcontext())
        with ctx:
            return super().apply(fn)

    # -- training ------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation without communication: backwards inside accumulate each
        unit's unsharded gradients; the first backward after it reduces their sum."""
        units = [m for m in self._fsdp_wrapped_module.modules() if "_fsdp_state" in m.__dict__]
        before = [m.__dict__["_fsdp_state"].sync for m in units]
        for m in units:
            m.set_requires_gradient_sync(False, recurse=False)
        try:
            yield
        finally:
            for m, s in zip(units, before):
                m.set_requires_gradient_sync(s, recurse=False)

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients of every parameter to a total ``norm_type``-norm of
        ``max_norm``; returns the total norm over all ranks' shards (one all-reduce)."""
        if not self._is_root:
            raise RuntimeError("clip_grad_norm should only be called on the root FSDP instance")
        from ...nn.utils.clip_grad import clip_grad_norm_

        return clip_grad_norm_(self.parameters(), max_norm, norm_type)

    # -- full parameters -----------------------------------------------------------------
    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse: bool = True, writeback: bool = True, rank0_only: bool = False,
                           offload_to_cpu: bool = False, with_grads: bool = False):
        """Inside, the parameters of ``module``'s FSDP units are whole local tensors (one
        all-gather per parameter); on exit, with ``writeback``, changes to this rank's rows
        are copied back into its shards, and the parameters are shards again.
        ``rank0_only``: the other ranks give their gathered parameters back at once (no
        writeback with it, as PyTorch). ``with_grads``: ``.grad`` is the whole gradient too.
        ``offload_to_cpu``: the CPU backend holds them on the host already."""
        if rank0_only and writeback:
            raise ValueError("writeback=True and rank0_only=True is not supported, as model "
                             "parameter shapes will be different across ranks, and writing to "
                             "them can lead to inconsistencies across ranks when the context is "
                             "exited.")
        if offload_to_cpu and not rank0_only:
            import warnings

            warnings.warn("offload_to_cpu=True and rank0_only=False may result in theunsharded "
                          "parameters being redundantly copied to CPU memory for GPUs sharing the "
                          "same CPU memory, which risks CPU OOM. We recommend using offload_to_cpu=True "
                          "with rank0_only=True.", stacklevel=3)
        fsdps = FullyShardedDataParallel.fsdp_modules(module) if recurse else (
            [module] if isinstance(module, FullyShardedDataParallel) else [])
        groups = [f._fsdp_wrapped_module.__dict__["_fsdp_state"].group for f in fsdps]
        groups = [g for g in groups if g is not None]
        rank = _comm.get_world().rank if _comm.is_initialized() else 0
        keep = not rank0_only or rank == 0
        saved = []
        for g in groups:
            grads = [p.grad for p in g.params]
            full_grads = [None if gr is None else (_wrap(_full_copy(gr.array, gr._spec)) if gr._spec is not None else gr)
                          for gr in grads] if with_grads else None
            g.finish_unshard("forward")
            for p in g.params:  # a sharded .grad went to the stash: it stays the parameter's
                g._stash.pop(id(p), None)
                p.grad = None
            if with_grads and keep:
                for p, fg in zip(g.params, full_grads):
                    p.grad = fg
            saved.append(grads)
        if not keep:
            for g, grads in zip(groups, saved):
                _reshard_keep_grads(g, grads)
        for f in fsdps:
            f.__dict__["_in_summon"] = True
        try:
            yield
        finally:
            for f in fsdps:
                f.__dict__["_in_summon"] = False
            if keep:
                for g, grads in zip(groups, saved):
                    if writeback:
                        _sd.write_back(g)
                    _reshard_keep_grads(g, grads)

    # -- state dicts (see _fsdp1_state.py) ---------------------------------------------------
    set_state_dict_type = staticmethod(_sd.set_state_dict_type)
    get_state_dict_type = staticmethod(_sd.get_state_dict_type)
    state_dict_type = staticmethod(_sd.state_dict_type)
    optim_state_dict = staticmethod(_sd.optim_state_dict)
    optim_state_dict_to_load = staticmethod(_sd.optim_state_dict_to_load)
    full_optim_state_dict = staticmethod(_sd.full_optim_state_dict)
    sharded_optim_state_dict = staticmethod(_sd.sharded_optim_state_dict)
    shard_full_optim_state_dict = staticmethod(_sd.shard_full_optim_state_dict)
    scatter_full_optim_state_dict = staticmethod(_sd.scatter_full_optim_state_dict)
    rekey_optim_state_dict = staticmethod(_sd.rekey_optim_state_dict)


def _reshard_keep_grads(group, grads) -> None:
    group.reshard()
    for p, gr in zip(group.params, grads):
        p.grad = gr


FSDP = FullyShardedDataParallel
