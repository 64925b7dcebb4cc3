"""FSDP1's state dicts: what ``FSDP.state_dict()`` returns and ``load_state_dict`` takes, the
optimizer's (``FSDP.optim_state_dict`` and friends), and ``summon_full_params``'s writeback.

Model state (PyTorch's keys: the ``_fsdp_wrapped_module.`` of every unit removed). A
post-hook on each FSDP wrapper renames its entries as ``Module.state_dict`` collects them
(inner units first); the outermost wrapper then gives the values the form its
``StateDictType`` asks for:

* ``FULL_STATE_DICT`` (the default): each sharded value is gathered whole (one all-gather per
  parameter; every rank must call ``state_dict()``); ``FullStateDictConfig(rank0_only=True)``:
  the other ranks get ``{}``; ``offload_to_cpu``: values on the host;
* ``SHARDED_STATE_DICT`` (and ``LOCAL_STATE_DICT``): the global tensors ``S(0)`` as they are
  (DTensor-like: ``dcp.save`` writes them, no communication).

``load_state_dict`` takes either: a load pre-hook puts the prefixes back, and
``Module.load_state_dict`` keeps each rank's rows of a whole value, or re-lays a global one.

Optimizer state: keyed by the same parameter names (PyTorch's format), each state tensor
whole (FULL, one all-gather each) or global (SHARDED); ``optim_state_dict_to_load`` turns
such a dict back into ``optimizer.load_state_dict``'s id-keyed form with each rank's shard.
"""

from __future__ import annotations

import contextlib

from ... import comm as _comm
from ...autograd import Tensor, _wrap
from ...backend.device import CPU
from ...backend.xp import to_device
from ..full_state import _full_copy, lay_out_like, params_by_index
from .api import (
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    OptimStateKeyType,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    StateDictSettings,
    StateDictType,
)

FSDP_PREFIX = "_fsdp_wrapped_module."

_CONFIGS = {
    StateDictType.FULL_STATE_DICT: (FullStateDictConfig, FullOptimStateDictConfig),
    StateDictType.SHARDED_STATE_DICT: (ShardedStateDictConfig, ShardedOptimStateDictConfig),
    StateDictType.LOCAL_STATE_DICT: (LocalStateDictConfig, LocalOptimStateDictConfig),
}


def _rank() -> int:
    return _comm.get_world().rank if _comm.is_initialized() else 0


def _fsdp_units(module) -> list:
    """The FSDP1 units in ``module``'s tree (``FullyShardedDataParallel.fsdp_modules``), found
    by the class's ``_fsdp1_unit`` flag: that module imports this one."""
    return [m for m in module.modules() if getattr(type(m), "_fsdp1_unit", False)]


def _whole(t):
    """A whole local copy of a global tensor (a collective); a local one as it is."""
    if isinstance(t, Tensor) and t._spec is not None:
        return _wrap(_full_copy(t.array, t._spec))
    return t


def _host(t):
    if isinstance(t, Tensor) and t.device.type != "cpu":
        out = _wrap(to_device(t.array, CPU))
        out._spec = t._spec
        return out
    return t


# ---------------------------------------------------------------------------- model state
def state_dict_post_hook(module, destination, prefix, local_metadata):
    """Rename this unit's entries (``prefix + "_fsdp_wrapped_module."`` -> ``prefix``) in
    place, keeping their order; the outermost unit then applies its StateDictType."""
    inner = prefix + FSDP_PREFIX
    items = list(destination.items())
    destination.clear()
    mine = []
    for k, v in items:
        if k.startswith(inner):
            k = prefix + k[len(inner):]
            mine.append(k)
        destination[k] = v
    if not module._is_root:
        return None
    if module._state_dict_type == StateDictType.FULL_STATE_DICT:
        cfg = module._state_dict_config
        drop = getattr(cfg, "rank0_only", False) and _rank() != 0
        for k in mine:  # every rank gathers (collectives), in the same key order
            v = _whole(destination[k])
            if cfg.offload_to_cpu:
                v = _host(v)
            if drop:
                del destination[k]
            else:
                destination[k] = v
    elif module._state_dict_config.offload_to_cpu:
        for k in mine:
            destination[k] = _host(destination[k])
    return None


def load_state_dict_pre_hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs):
    """Give keys saved without the unit's prefix (PyTorch's form) the prefix back."""
    inner = prefix + FSDP_PREFIX
    for k in [k for k in state_dict if k.startswith(prefix) and not k.startswith(inner)]:
        state_dict[inner + k[len(prefix):]] = state_dict.pop(k)


# ---------------------------------------------------------------------------- settings
def set_state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
    """Set the state-dict type (and configs) of every FSDP unit in ``module``; returns the
    previous :class:`StateDictSettings` (of the first unit)."""
    if not isinstance(state_dict_type, StateDictType):
        raise TypeError(f"state_dict_type must be a StateDictType, got {state_dict_type!r}")
    cfg_cls, ocfg_cls = _CONFIGS[state_dict_type]
    if state_dict_config is None:
        state_dict_config = cfg_cls()
    if optim_state_dict_config is None:
        optim_state_dict_config = ocfg_cls()
    if type(state_dict_config) is not cfg_cls:
        raise RuntimeError(f"Expected state_dict_config of type {cfg_cls} but got "
                           f"{type(state_dict_config)}")
    if type(optim_state_dict_config) is not ocfg_cls:
        raise RuntimeError(f"Expected optim_state_dict_config of type {ocfg_cls} but got "
                           f"{type(optim_state_dict_config)}")
    units = _fsdp_units(module)
    if not units:
        raise ValueError(f"set_state_dict_type: {type(module).__name__} holds no "
                         "FullyShardedDataParallel module; wrap the model with FSDP first")
    prev = get_state_dict_type(module)
    for m in units:
        d = m.__dict__
        d["_state_dict_type"] = state_dict_type
        d["_state_dict_config"] = state_dict_config
        d["_optim_state_dict_config"] = optim_state_dict_config
    return prev


def get_state_dict_type(module) -> StateDictSettings:
    units = _fsdp_units(module)
    if not units:
        raise ValueError(f"get_state_dict_type: {type(module).__name__} holds no FSDP module")
    u = units[0]
    return StateDictSettings(u._state_dict_type, u._state_dict_config, u._optim_state_dict_config)


@contextlib.contextmanager
def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
    """``set_state_dict_type`` for the duration of the context."""
    prev = set_state_dict_type(module, state_dict_type, state_dict_config, optim_state_dict_config)
    try:
        yield
    finally:
        set_state_dict_type(module, prev.state_dict_type, prev.state_dict_config,
                            prev.optim_state_dict_config)


# ---------------------------------------------------------------------------- summon's writeback
def write_back(group) -> None:
    """Copy this rank's rows of each gathered parameter into its shard (``summon_full_params``
    with ``writeback``); a replicated parameter's cast copy goes back to its master array."""
    for i, (full, shard) in enumerate(zip(group.full_views, group.shard_views)):
        lo, hi = group.rows[i][group.rank]
        p = group.split[i]
        src = p.array if p.array is not full and p.array.shape == full.shape else full
        shard[...] = src[lo:hi]
    for p in group.repl:
        master = group._repl_master.get(id(p))
        if master is not None:
            master[...] = p.array


# ---------------------------------------------------------------------------- optimizer state
def _names(model, optim) -> list:
    """PyTorch's name (no FSDP prefixes) of each optimizer parameter, in index order."""
    by_id = {}
    for n, p in model.named_parameters():
        by_id.setdefault(id(p), n.replace(FSDP_PREFIX, ""))
    out = []
    for p in params_by_index(optim):
        if id(p) not in by_id:
            raise ValueError("optim_state_dict: the optimizer holds a parameter the model does not; "
                             "build the optimizer over model.parameters()")
        out.append(by_id[id(p)])
    return out


def _named_osd(model, optim, full: bool, offload: bool) -> dict:
    from .fully_shard import sharded_optimizer_state_dict

    names = _names(model, optim)
    sd = sharded_optimizer_state_dict(optim)
    conv = (lambda v: _host(_whole(v)) if offload else _whole(v)) if full else (
        (lambda v: _host(v)) if offload else (lambda v: v))
    state = {names[i]: ({k: conv(v) for k, v in st.items()} if isinstance(st, dict) else st)
             for i, st in sd["state"].items()}
    groups = [{**g, "params": [names[i] for i in g["params"]]} for g in sd["param_groups"]]
    return {"state": state, "param_groups": groups}


def _cfg(model):
    units = _fsdp_units(model)
    if not units:
        raise ValueError(f"{type(model).__name__} holds no FullyShardedDataParallel module")
    return units[0]._state_dict_type, units[0]._optim_state_dict_config


def optim_state_dict(model, optim, optim_state_dict=None, group=None) -> dict:
    """``optim``'s state keyed by parameter names: whole tensors under FULL_STATE_DICT
    (``FullOptimStateDictConfig(rank0_only=True)``: ``{}`` off rank 0), global tensors under
    SHARDED_STATE_DICT."""
    kind, cfg = _cfg(model)
    full = kind == StateDictType.FULL_STATE_DICT
    out = _named_osd(model, optim, full, cfg.offload_to_cpu)
    if full and getattr(cfg, "rank0_only", False) and _rank() != 0:
        return {}
    return out


def _to_load(model, optim, osd) -> dict:
    """A name-keyed optimizer state dict as ``optim.load_state_dict``'s id-keyed one, each
    whole state tensor cut to this rank's shard."""
    names = _names(model, optim)
    pos = {n: i for i, n in enumerate(names)}
    unknown = [n for n in osd["state"] if n not in pos]
    if unknown:
        raise ValueError(f"optim_state_dict_to_load: state for {unknown[:5]}, which the optimizer "
                         "does not hold; build it over the same model as the saved one")
    params = params_by_index(optim)
    state = {}
    for n, st in osd["state"].items():
        p = params[pos[n]]
        state[pos[n]] = {k: lay_out_like(p, v) for k, v in st.items()} if isinstance(st, dict) else st
    groups = [{**g, "params": [pos[n] if isinstance(n, str) else n for n in g["params"]]}
              for g in osd["param_groups"]]
    return {"state": state, "param_groups": groups}


def _from_rank0(osd):
    """Rank 0's dict on every rank (tensors travel as arrays)."""
    if not _comm.is_initialized() or _comm.get_world().size == 1:
        return osd
    world = _comm.get_world()

    def pack(o):
        if isinstance(o, Tensor):
            return ("__t__", to_device(o.array, CPU))
        if isinstance(o, dict):
            return {k: pack(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return type(o)(pack(v) for v in o)
        return o

    def unpack(o):
        if isinstance(o, tuple) and len(o) == 2 and o[0] == "__t__":
            return _wrap(o[1])
        if isinstance(o, dict):
            return {k: unpack(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return type(o)(unpack(v) for v in o)
        return o

    return unpack(world.broadcast_object(pack(osd) if world.rank == 0 else None, 0))


def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer: bool = False,
                             load_directly: bool = False, group=None) -> dict:
    """What ``optim_state_dict`` gave, as ``optim.load_state_dict`` takes it (a collective
    under FULL_STATE_DICT with ``rank0_only``: rank 0's dict is broadcast). With
    ``load_directly`` it is loaded too."""
    kind, cfg = _cfg(model)
    if kind == StateDictType.FULL_STATE_DICT and getattr(cfg, "rank0_only", False):
        optim_state_dict = _from_rank0(optim_state_dict)
    out = _to_load(model, optim, optim_state_dict)
    if load_directly:
        optim.load_state_dict(out)
    return out


def full_optim_state_dict(model, optim, optim_input=None, rank0_only: bool = True, group=None) -> dict:
    """Whole optimizer state keyed by parameter names (every rank calls it; with
    ``rank0_only`` the others get ``{}``)."""
    out = _named_osd(model, optim, True, False)
    return {} if rank0_only and _rank() != 0 else out


def sharded_optim_state_dict(model, optim, group=None) -> dict:
    """Optimizer state keyed by parameter names, each state tensor a global tensor."""
    return _named_osd(model, optim, False, False)


def shard_full_optim_state_dict(full_optim_state_dict, model, optim_input=None, optim=None) -> dict:
    """A whole name-keyed optimizer state (``full_optim_state_dict``'s) as ``optim``'s
    id-keyed state dict of this rank's shards."""
    if optim is None:
        raise ValueError("shard_full_optim_state_dict: pass optim= (the optimizer to load into)")
    return _to_load(model, optim, full_optim_state_dict)


def scatter_full_optim_state_dict(full_optim_state_dict, model, optim_input=None, optim=None, group=None) -> dict:
    """``shard_full_optim_state_dict`` of rank 0's dict (the others may pass ``None``)."""
    if optim is None:
        raise ValueError("scatter_full_optim_state_dict: pass optim= (the optimizer to load into)")
    return _to_load(model, optim, _from_rank0(full_optim_state_dict))


def rekey_optim_state_dict(optim_state_dict, optim_state_key_type, model, optim_input=None, optim=None) -> dict:
    """Re-key an optimizer state dict by parameter name (``OptimStateKeyType.PARAM_NAME``)
    or by position in ``model.parameters()`` (``PARAM_ID``), between FSDP and plain models."""
    if not isinstance(optim_state_key_type, OptimStateKeyType):
        raise TypeError(f"optim_state_key_type must be an OptimStateKeyType, got {optim_state_key_type!r}")
    names = [n.replace(FSDP_PREFIX, "") for n, _ in model.named_parameters()]
    if optim_state_key_type == OptimStateKeyType.PARAM_ID:
        key = {n: i for i, n in enumerate(names)}
    else:
        key = dict(enumerate(names))

    def rekey(k):
        return key.get(k, k)

    state = {rekey(k): v for k, v in optim_state_dict["state"].items()}
    groups = [{**g, "params": [rekey(k) for k in g["params"]]} for g in optim_state_dict["param_groups"]]
    return {"state": state, "param_groups": groups}

