"""``get_state_dict`` / ``set_state_dict``: model + optimizer state in a layout-aware form.

PyTorch's ``torch.distributed.checkpoint.state_dict`` names. What they add over
``model.state_dict()`` / ``optimizer.state_dict()``:

* the optimizer's state is keyed by parameter name (``{"state": {"fc.weight": {...}},
  "param_groups": [{..., "params": ["fc.weight", ...]}]}``), not by position, so it does not
  depend on how the optimizer was built;
* each per-parameter state tensor of a global parameter (tensor parallel, ``fully_shard``)
  is returned as a global tensor with its parameter's layout — the convention of
  ``full_state.py`` and of ``/tmp/briefs/zero_api.md``: a state tensor whose local shape is
  the parameter's local shape (``ndim > 0``) is laid out like the parameter; scalars such as
  ``step`` are replicated. A ``ZeroRedundancyOptimizer`` (stage 1) gives its own
  ``sharded_state_dict()``, whose states are ``Split(0)`` over the ranks. So :func:`~.save`
  writes each rank's shard and :func:`~.load` reshards them into any other layout;
* an optimizer that has not stepped yet gets its state created first (one ``step()`` with
  zero gradients and ``lr = 0``, as PyTorch does), so a fresh optimizer can be the target of
  a load. Whether that is needed is agreed over the world (one ``all_gather_object`` of a
  bool), because a sharded optimizer's step is a collective: call ``get_state_dict`` on
  every rank, as ``save`` and ``load``;
* a ``DistributedDataParallel`` wrapper is looked through (no ``module.`` prefix), so DDP
  checkpoints load into plain, tensor-parallel or sharded models and back.

The returned dicts share memory with the model and optimizer where they can; always finish
a load with :func:`set_state_dict`, which goes through ``load_state_dict`` of each.
"""

from __future__ import annotations

from ... import comm as _comm
from ...autograd import Tensor, _wrap
from ..full_state import params_by_index

__all__ = ["get_state_dict", "set_state_dict", "get_model_state_dict",
           "get_optimizer_state_dict", "set_model_state_dict", "set_optimizer_state_dict"]


def _unwrap(model):
    while type(model).__name__ == "DistributedDataParallel" and hasattr(model, "module"):
        model = model.module
    return model


def _param_names(model, optimizer) -> list[str]:
    """FQN of each optimizer parameter, in ``state_dict()`` index order."""
    names = {}
    for n, p in _unwrap(model).named_parameters():
        names.setdefault(id(p), n)
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
        state[i] = {k: (_as_global(v, spec) if isinstance(v, Tensor) and v.array.ndim
                        and tuple(v.array.shape) == local else v) for k, v in st.items()}
    return {"state": state, "param_groups": sd["param_groups"]}


def get_model_state_dict(model) -> dict:
    return dict(_unwrap(model).state_dict())


def get_optimizer_state_dict(model, optimizers) -> dict:
    """One optimizer's state keyed by parameter name (see the module docstring)."""
    if isinstance(optimizers, list | tuple):
        if len(optimizers) != 1:
            raise NotImplementedError("get_state_dict with several optimizers: pass one")
        optimizers = optimizers[0]
    _init_optim_state(optimizers)
    names = _param_names(model, optimizers)
    sd = _index_state_dict(optimizers)
    state = {names[i]: st for i, st in sd["state"].items()}
    groups = [{**g, "params": [names[i] for i in g["params"]]} for g in sd["param_groups"]]
    return {"state": state, "param_groups": groups}


def get_state_dict(model, optimizers) -> tuple[dict, dict]:
    """``(model_state_dict, optimizer_state_dict)`` ready for :func:`~.save` / :func:`~.load`."""
    return get_model_state_dict(model), get_optimizer_state_dict(model, optimizers)


def set_model_state_dict(model, model_state_dict) -> None:
    _unwrap(model).load_state_dict(model_state_dict)


def set_optimizer_state_dict(model, optimizers, optim_state_dict) -> None:
    if isinstance(optimizers, list | tuple):
        (optimizers,) = optimizers
    names = _param_names(model, optimizers)
    pos = {n: i for i, n in enumerate(names)}
    unknown = [n for n in optim_state_dict["state"] if n not in pos]
    if unknown:
        raise ValueError(
            f"set_state_dict: optimizer state for {unknown[:5]}, which the optimizer does not "
            "hold; build it over the same parameters as the saved one"
        )
    sharded_loader = getattr(optimizers, "load_sharded_state_dict", None)
    state = {}
    for n, st in optim_state_dict["state"].items():
        state[pos[n]] = st if callable(sharded_loader) else {
            k: (_wrap(v.array) if isinstance(v, Tensor) and getattr(v, "_spec", None) is not None
                else v) for k, v in st.items()}
    groups = [{**g, "params": [pos[n] for n in g["params"]]}
              for g in optim_state_dict["param_groups"]]
    sd = {"state": state, "param_groups": groups}
    if callable(sharded_loader):
        sharded_loader(sd)
    else:
        optimizers.load_state_dict(sd)


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict) -> None:
    """Load what :func:`get_state_dict` returned (after :func:`~.load` filled it)."""
    set_model_state_dict(model, model_state_dict)
    set_optimizer_state_dict(model, optimizers, optim_state_dict)
