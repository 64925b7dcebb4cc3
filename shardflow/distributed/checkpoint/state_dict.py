"""``get_state_dict`` / ``set_state_dict``: model + optimizer state in a layout-aware form.

PyTorch's ``torch.distributed.checkpoint.state_dict`` names and ``StateDictOptions``. What
they add over ``model.state_dict()`` / ``optimizer.state_dict()``:

* the optimizer's state is keyed by parameter name (``{"state": {"fc.weight": {...}},
  "param_groups": [{..., "params": ["fc.weight", ...]}]}``), not by position, so it does not
  depend on how the optimizer was built;
* each per-parameter state tensor of a global parameter (tensor parallel, ``fully_shard``)
  is a global tensor with its parameter's layout (the optimizers make it so, as PyTorch's
  state of a DTensor parameter is a DTensor); scalars such as ``step`` are local. A
  ``ZeroRedundancyOptimizer`` (stage 1) gives its own ``sharded_state_dict()``, whose states
  are ``Split(0)`` over the ranks. So :func:`~.save` writes each rank's shard and
  :func:`~.load` reshards them into any other layout;
* ``options=StateDictOptions(full_state_dict=True)``: every global tensor is gathered whole
  (plain tensors, a collective), for a one-file checkpoint; with ``cpu_offload=True`` as
  well, only rank 0 keeps the result (the others get ``{}``), as in PyTorch. The ``set_``
  functions take such whole tensors back: each is laid out like its parameter (this rank
  keeps its shard), and ``broadcast_from_rank0=True`` sends rank 0's dict to the others
  first (they may pass ``{}``);
* an optimizer that has not stepped yet gets its state created first (one ``step()`` with
  zero gradients and ``lr = 0``, as PyTorch does), so a fresh optimizer can be the target of
  a load. Whether that is needed is agreed over the world (one ``all_gather_object`` of a
  bool), because a sharded optimizer's step is a collective: call ``get_state_dict`` on
  every rank, as ``save`` and ``load``;
* a ``DistributedDataParallel`` wrapper is looked through (no ``module.`` prefix), so DDP
  checkpoints load into plain, tensor-parallel or sharded models and back; so are FSDP1's
  ``_fsdp_wrapped_module`` and activation checkpointing's ``_checkpoint_wrapped_module`` in
  the optimizer's parameter names (the optimizer state is keyed ``net1.weight``, as the
  model's state dict and PyTorch's).

The returned dicts share memory with the model and optimizer where they can (not with
``full_state_dict``); always finish a load with :func:`set_state_dict`, which checks every
tensor against its parameter (shape and layout, before changing anything) and goes through
``load_state_dict`` of each.

Communication: none, except ``full_state_dict`` (one all-gather per sharded tensor),
``broadcast_from_rank0`` (one ``broadcast_object``) and a fresh optimizer's state creation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import comm as _comm
from ...autograd import Tensor, _wrap
from ...backend.device import CPU
from ...backend.xp import to_device
from ...optim.optimizer import check_state_fits
from ..full_state import _full_copy, lay_out_like, params_by_index

__all__ = ["get_state_dict", "set_state_dict", "get_model_state_dict",
           "get_optimizer_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "StateDictOptions"]


@dataclass
class StateDictOptions:
    """PyTorch's options of the ``get_``/``set_`` functions (see the module docstring).
    ``full_state_dict``: whole plain tensors; ``cpu_offload``: tensors on the host (with
    ``full_state_dict``: only rank 0 gets them); ``ignore_frozen_params``: leave out
    parameters with ``requires_grad=False``; ``strict``: ``model.load_state_dict``'s;
    ``broadcast_from_rank0`` (``set_`` with ``full_state_dict``): rank 0's dict is used on
    every rank. ``keep_submodule_prefixes``, ``flatten_optimizer_state_dict`` and
    ``dsd_fqn_modifiers`` are accepted at their defaults only."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _options(options, submodules=None) -> StateDictOptions:
    if submodules is not None:
        raise NotImplementedError("get/set_state_dict(submodules=...) is not supported; pass the "
                                  "whole model (and filter the returned dict's keys)")
    if options is None:
        return StateDictOptions()
    if not isinstance(options, StateDictOptions):
        raise TypeError(f"options must be a StateDictOptions, got {type(options).__name__}")
    if options.flatten_optimizer_state_dict or not options.keep_submodule_prefixes:
        raise NotImplementedError(
            "StateDictOptions(flatten_optimizer_state_dict=True / keep_submodule_prefixes=False) "
            "is not supported; leave them at their defaults")
    if options.broadcast_from_rank0 and not options.full_state_dict:
        raise ValueError("StateDictOptions(broadcast_from_rank0=True) needs full_state_dict=True "
                         "(rank 0 holds whole tensors), as in PyTorch")
    return options


def _world_rank() -> int:
    return _comm.get_world().rank if _comm.is_initialized() else 0


def _map_tensors(obj, fn):
    """``obj`` (nested dicts / lists / tuples) with every Tensor replaced by ``fn(tensor)``."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj


def _full(sd: dict, opts: StateDictOptions) -> dict:
    """``sd`` with every global tensor gathered whole (a collective) and, with
    ``cpu_offload``, every tensor on the host, kept on rank 0 only."""
    if opts.full_state_dict:
        sd = _map_tensors(sd, lambda t: t if t._spec is None else _wrap(_full_copy(t.array, t._spec)))
    if opts.cpu_offload:
        sd = _map_tensors(sd, _on_host)
        if opts.full_state_dict and _world_rank() != 0:
            return {}
    return sd


def _on_host(t: Tensor) -> Tensor:
    if t.device.type == "cpu":
        return t
    out = _wrap(to_device(t.array, CPU))
    out._spec = t._spec  # a global tensor stays global (its shard moves)
    return out


def _from_rank0(sd: dict, opts: StateDictOptions) -> dict:
    """``broadcast_from_rank0``: rank 0's dict on every rank (tensors travel as arrays)."""
    if not opts.broadcast_from_rank0 or not _comm.is_initialized() or _comm.get_world().size == 1:
        return sd
    world = _comm.get_world()
    mine = _map_tensors(sd, lambda t: np.asarray(to_device(t.array, CPU))) if world.rank == 0 else None
    got = world.broadcast_object(mine, 0)

    def wrap(obj):
        if isinstance(obj, np.ndarray):
            return _wrap(obj)
        if isinstance(obj, dict):
            return {k: wrap(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(wrap(v) for v in obj)
        return obj

    return wrap(got)


def _unwrap(model):
    while type(model).__name__ == "DistributedDataParallel" and hasattr(model, "module"):
        model = model.module
    return model


# module names that wrappers put into parameter names and PyTorch's FQNs leave out (FSDP1's
# ``_fsdp_wrapped_module``, activation checkpointing's ``_checkpoint_wrapped_module``): the
# names a model's state_dict() has, so that optimizer state keys match the model's keys
_WRAPPER_NAMES = frozenset({"_fsdp_wrapped_module", "_checkpoint_wrapped_module"})


def _fqn(name: str) -> str:
    """``name`` without the wrappers' module names (PyTorch's ``_get_fqns``)."""
    return ".".join(part for part in name.split(".") if part not in _WRAPPER_NAMES)


def _param_names(model, optimizer) -> list[str]:
    """FQN of each optimizer parameter, in ``state_dict()`` index order (wrapper module
    names left out, as PyTorch: ``net1.weight``, not ``_fsdp_wrapped_module.net1.weight``)."""
    names = {}
    for n, p in _unwrap(model).named_parameters():
        names.setdefault(id(p), _fqn(n))
    out, seen = [], set()
    for g in optimizer.param_groups:
        for p in g["params"]:
            if id(p) in seen:
                continue
            seen.add(id(p))
            if id(p) not in names:
                raise ValueError(
                    "get_state_dict: the optimizer holds a parameter of shape "
                    f"{tuple(p.shape)} that is not a parameter of the model; pass the model the "
                    "optimizer was built for"
                )
            out.append(names[id(p)])
    return out


def _init_optim_state(optimizer) -> None:
    """Create missing optimizer state: a step with zero gradients and lr 0 (PyTorch's way)."""
    everything = params_by_index(optimizer)
    sd = _index_state_dict(optimizer)
    missing = any(p.requires_grad and not sd["state"].get(i) for i, p in enumerate(everything))
    if _comm.is_initialized() and _comm.get_world().size > 1:
        # the step below is a collective for sharded optimizers: every rank decides the same
        missing = any(_comm.get_world().all_gather_object(missing))
    if not missing:
        return
    params = [p for p in everything if p.requires_grad]
    saved_grads = [p.grad for p in params]
    for p in params:
        g = _wrap(p.array * 0)
        if getattr(p, "_spec", None) is not None:
            g._spec = p._spec.grad_spec()
        p.grad = g
    lrs = [g["lr"] for g in optimizer.param_groups]
    for g in optimizer.param_groups:
        g["lr"] = 0.0
    try:
        optimizer.step()
    finally:
        for g, lr in zip(optimizer.param_groups, lrs):
            g["lr"] = lr
        for p, g in zip(params, saved_grads):
            p.grad = g


def _as_global(v, spec):
    t = _wrap(v.array)
    t._spec = spec
    return t


def _legacy_layout(v, spec, local) -> bool:
    """A plain state tensor of the parameter's shard shape (state made before the
    optimizers laid it out like the parameter, or by a custom optimizer)."""
    return (isinstance(v, Tensor) and v._spec is None and v.array.ndim > 0
            and tuple(v.array.shape) == local)


def _index_state_dict(optimizer) -> dict:
    """The optimizer's index-keyed state dict with layout-carrying state tensors."""
    sharded = getattr(optimizer, "sharded_state_dict", None)
    if callable(sharded):
        return sharded()
    sd = optimizer.state_dict()
    params = params_by_index(optimizer)
    state = {}
    for i, st in sd["state"].items():
        spec = getattr(params[i], "_spec", None)
        if spec is None:
            state[i] = dict(st)
            continue
        local = tuple(params[i].array.shape)
        state[i] = {k: (_as_global(v, spec) if _legacy_layout(v, spec, local) else v)
                    for k, v in st.items()}
    return {"state": state, "param_groups": sd["param_groups"]}


def get_model_state_dict(model, *, submodules=None, options=None) -> dict:
    """``model.state_dict()`` (DDP looked through); see ``StateDictOptions``."""
    opts = _options(options, submodules)
    inner = _unwrap(model)
    sd = dict(inner.state_dict())
    if opts.ignore_frozen_params:
        frozen = {n for n, p in inner.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    return _full(sd, opts)


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None) -> dict:
    """One optimizer's state keyed by parameter name (see the module docstring)."""
    opts = _options(options, submodules)
    if isinstance(optimizers, list | tuple):
        if len(optimizers) != 1:
            raise NotImplementedError("get_state_dict with several optimizers: pass one")
        optimizers = optimizers[0]
    _init_optim_state(optimizers)
    names = _param_names(model, optimizers)
    sd = _index_state_dict(optimizers)
    state = {names[i]: st for i, st in sd["state"].items()}
    groups = [{**g, "params": [names[i] for i in g["params"]]} for g in sd["param_groups"]]
    return _full({"state": state, "param_groups": groups}, opts)


def get_state_dict(model, optimizers, *, submodules=None, options=None) -> tuple[dict, dict]:
    """``(model_state_dict, optimizer_state_dict)`` ready for :func:`~.save` / :func:`~.load`."""
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options))


def set_model_state_dict(model, model_state_dict, *, options=None):
    """Load ``model_state_dict`` (whole plain tensors are laid out like the model's global
    ones); returns ``load_state_dict``'s ``(missing_keys, unexpected_keys)``."""
    opts = _options(options)
    sd = _from_rank0(model_state_dict, opts)
    inner = _unwrap(model)
    current = inner.state_dict()
    sd = {k: (lay_out_like(current[k], v) if k in current else v) for k, v in sd.items()}
    return inner.load_state_dict(sd, strict=opts.strict)


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None) -> None:
    """Load a name-keyed optimizer state (see the module docstring); every state tensor is
    checked against its parameter (shape, layout) before anything changes."""
    opts = _options(options)
    if isinstance(optimizers, list | tuple):
        (optimizers,) = optimizers
    optim_state_dict = _from_rank0(optim_state_dict, opts)
    names = _param_names(model, optimizers)
    pos = {n: i for i, n in enumerate(names)}
    unknown = [n for n in optim_state_dict["state"] if n not in pos]
    if unknown:
        raise ValueError(
            f"set_state_dict: optimizer state for {unknown[:5]}, which the optimizer does not "
            "hold; build it over the same parameters as the saved one"
        )
    params = params_by_index(optimizers)
    state = {}
    for n, st in optim_state_dict["state"].items():
        p = params[pos[n]]
        state[pos[n]] = {k: lay_out_like(p, v) for k, v in st.items()} if isinstance(st, dict) else st
    groups = [{**g, "params": [pos[n] for n in g["params"]]}
              for g in optim_state_dict["param_groups"]]
    sd = {"state": state, "param_groups": groups}
    sharded_loader = getattr(optimizers, "load_sharded_state_dict", None)
    if callable(sharded_loader):
        # ZeRO-1: its sharded form (global values), or whole tensors (PyTorch's format)
        laid_out = any(isinstance(v, Tensor) and v._spec is not None
                       for st in state.values() if isinstance(st, dict) for v in st.values())
        (sharded_loader if laid_out else optimizers.load_state_dict)(sd)
        return
    # the same check load_state_dict makes, here with the parameters' names
    check_state_fits(optimizers, {i: (params[i], st) for i, st in state.items()},
                     {i: n for n, i in pos.items()})
    optimizers.load_state_dict(sd)


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    """Load what :func:`get_state_dict` returned (after :func:`~.load` filled it)."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
