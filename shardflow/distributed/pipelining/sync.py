"""The whole model from a pipeline: every parameter's (and optimizer state's) current value,
brought from the rank that trains it to every rank.

Under pipeline parallelism each rank updates only the parameters of its own stage; the
copies it holds of the other stages' parameters (the model was built whole on every rank)
go stale after the first step. Evaluation, sampling and checkpoints need the whole model,
so :func:`sync_parameters` copies each parameter from its owner, and
:func:`gather_optimizer_state` builds the whole optimizer ``state_dict`` the same way.

Ownership (:func:`parameter_owners`): a parameter belongs to the first stage that holds it
(a tied parameter, e.g. GPT's embedding / LM head shared by the first and last stage, to the
first: both copies hold the same value after every step) and, among the data-parallel
replicas of that stage (which hold equal values), to replica 0; ``rank_of(stage)`` gives its
world rank: ``stage * dp * tp`` in ``pipeline_mesh``'s numbering (replica 0, TP index 0).
With tensor parallelism inside the stages (``tp_layout.py``) a stage's parameters are global
tensors on its TP sub-mesh: their whole value is first gathered there (``full_state_dict``).

Communication plan (every rank calls, in the same order; ``group`` is normally the world):

* :func:`whole_parameters`: with TP, one all-gather per split parameter on each stage's TP
  sub-mesh (``full_state_dict``; none without TP); then for each owner rank in increasing
  order and each dtype of its parameters, one ``broadcast`` on ``group`` from the owner of
  the flat concatenation of those parameters' whole values (the receivers know the shapes:
  every rank built the same model). One broadcast per stage for a float32 model: the bytes
  of the whole model reach every rank. :func:`sync_parameters` writes them into the plain
  (not laid out) parameters of each rank, in place.
* :func:`gather_optimizer_state`: the same for the optimizer state (``full_optimizer_state_dict``
  on the TP sub-meshes, then per owner one ``broadcast_object`` of the layout: parameter
  index, state key, shape, dtype, no data; and one ``broadcast`` per dtype of the flat values,
  AdamW's ``exp_avg``, ``exp_avg_sq``, ``step``): twice the model's bytes.

Both are plain collectives on whole arrays: nothing is pickled but the small layout list.
Values stay on the device they live on (a GPU model's parameters and AdamW state are
broadcast as device arrays, over NCCL); host values (a step count kept as a number) go as
host arrays, in their own broadcasts.
"""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import Tensor
from ...backend.xp import CPU, device_of, get_array_module, new_array
from ..full_state import full_optimizer_state_dict, full_state_dict, params_by_index

__all__ = ["parameter_owners", "whole_parameters", "sync_parameters", "gather_optimizer_state"]


def parameter_owners(pipe, rank_of) -> dict:
    """``{id(parameter): world rank of its owner}`` for the parameters of ``pipe``'s stages:
    the first stage that holds the parameter, on rank ``rank_of(stage)``."""
    owner: dict = {}
    for s, mod in enumerate(pipe.stages):
        for p in mod.parameters():
            owner.setdefault(id(p), int(rank_of(s)))
    return owner


def _broadcast_arrays(arrays: list, src: int, group) -> None:
    """Overwrite ``arrays`` on every rank with the values on rank ``src``: one broadcast per
    device and dtype of a flat buffer on that device (the caller guarantees equal shapes,
    dtypes and devices on every rank)."""
    for key in sorted({(device_of(a).type, a.dtype.str) for a in arrays}):
        sel = [a for a in arrays if (device_of(a).type, a.dtype.str) == key]
        dev, dt = device_of(sel[0]), np.dtype(key[1])
        n = sum(a.size for a in sel)
        if group.rank == src:
            buf = get_array_module(sel[0]).concatenate([a.reshape(-1) for a in sel])
        else:
            buf = new_array(dev, lambda xp, n=n, dt=dt: xp.empty(n, dtype=dt))
        group.broadcast(buf, src=src)
        if group.rank != src:
            off = 0
            for a in sel:
                a[...] = buf[off:off + a.size].reshape(a.shape)
                off += a.size


def _whole_shape(p) -> tuple:
    spec = getattr(p, "_spec", None)
    return tuple(spec.shape) if spec is not None else tuple(p.array.shape)


def _empty_like_param(p, shape):
    """An uninitialised array of ``shape`` with ``p``'s dtype, on ``p``'s device."""
    dt = p.array.dtype
    return new_array(device_of(p.array), lambda xp: xp.empty(shape, dtype=dt))


def whole_parameters(model, owners: dict, group) -> dict:
    """``{name: whole value}`` (arrays on the parameters' device, as ``model.named_parameters()`` names them) of
    every parameter ``owners`` lists, as its owner holds it, on every rank (a collective)."""
    local = full_state_dict(model)  # whole values of this rank's laid-out parameters
    named = [(n, p) for n, p in model.named_parameters() if id(p) in owners]
    out = {}
    for src in sorted({owners[id(p)] for _, p in named}):
        mine = [(n, p) for n, p in named if owners[id(p)] == src]
        if group.rank == src:
            arrays = [local[n].array for n, _ in mine]  # on the parameter's device
        else:
            arrays = [_empty_like_param(p, _whole_shape(p)) for _, p in mine]
        _broadcast_arrays(arrays, src, group)
        out.update((n, a) for (n, _), a in zip(mine, arrays))
    return out


def sync_parameters(model, owners: dict, group) -> dict:
    """Give every rank the owner's current value of each parameter of ``model`` that
    ``owners`` lists, written in place (optimizers and modules keep their references) into
    the parameters that are plain tensors on this rank (a laid-out one keeps its shard);
    returns :func:`whole_parameters`' dict."""
    whole = whole_parameters(model, owners, group)
    for n, p in model.named_parameters():
        if n in whole and owners[id(p)] != group.rank and getattr(p, "_spec", None) is None:
            p.array[...] = whole[n]
            p._version_counter[0] += 1  # changed in place, as optimizer.step does
    return whole


def gather_optimizer_state(optimizer, owners: dict, group) -> dict:
    """The whole ``optimizer.state_dict()`` on every rank: each parameter's state as its
    owner holds it (a collective; the ranks' own state is not changed)."""
    params = params_by_index(optimizer)
    local = full_optimizer_state_dict(optimizer)  # whole state of laid-out parameters
    state: dict = {}
    for src in sorted(set(owners.values())):
        layout, values = None, None
        if group.rank == src:
            layout, values = [], []
            for i, p in enumerate(params):
                if owners.get(id(p)) != src or i not in local["state"]:
                    continue
                for key, v in local["state"][i].items():
                    # a copy (the ranks' own state is not changed), on the value's device
                    arr = (get_array_module(v.array).array(v.array, copy=True) if isinstance(v, Tensor)
                           else np.array(v))
                    on_gpu = device_of(arr).type != "cpu"
                    layout.append((i, key, arr.shape, arr.dtype.str, isinstance(v, Tensor), on_gpu))
                    values.append(arr)
        layout = group.broadcast_object(layout, src=src)
        if values is None:  # a device state on this rank's device of its parameter (AdamW's
            # moments), a host one on the host (a step count kept on the CPU, or a number)
            values = [new_array(device_of(params[i].array) if on_gpu else CPU,
                                lambda xp, s=shape, d=dt: xp.empty(s, dtype=np.dtype(d)))
                      for i, _, shape, dt, _, on_gpu in layout]
        _broadcast_arrays(values, src, group)
        for (i, key, _, _, is_tensor, _), arr in zip(layout, values):
            state.setdefault(i, {})[key] = Tensor(arr) if is_tensor else arr.item()
    return {"state": state, "param_groups": local["param_groups"]}
