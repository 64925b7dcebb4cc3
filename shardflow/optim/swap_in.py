"""``torch.optim.swap_in_optimizer_params_and_state(optimizer, params, optim_state)``: a context
manager under which an optimizer works on other parameter tensors and another state (an
``optimizer.state_dict()``-shaped dict), the live ones restored on exit (PyTorch 2.13; it is
used to run ``step()`` on stand-in tensors, e.g. while tracing a step).

``params`` (a dict, in the order of the optimizer's parameters across its groups, as
``model.named_parameters()`` gives them) replace each group's ``params``; the swap-in
``param_groups`` replace each group's hyperparameters; the swap-in ``state`` (keyed by packed
parameter ids) becomes ``optimizer.state`` keyed by the swapped-in tensors, each per-parameter
dict shallow-copied, so that in-place updates of its tensors (what every shardflow optimizer's
``step`` does) reach the caller's dict while new keys stay local, as in PyTorch. The checks
and their ``RuntimeError`` texts are PyTorch's.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict

from ..autograd import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_groups(optimizer, optim_state) -> list:
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state, groups = optim_state.get("state"), optim_state.get("param_groups")
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter "
                           f"ids to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group "
                           f"dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    for idx, (live, group) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        if not isinstance(group, dict):
            raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
        ids = group.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] "
                               "entries keyed by packed parameter ids.")
        if len(ids) != len(live["params"]):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params "
                               "than the live optimizer param group.")
        only_in, only_live = [k for k in group if k not in live], [k for k in live if k not in group]
        if only_in or only_live:
            raise RuntimeError(
                f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live "
                f"optimizer group keys for group {idx}. Keys only in swap-in: {only_in}. Keys only in live: "
                f"{only_live}.")
    known = {i for g in groups for i in g["params"]}
    extra = [k for k in state if k not in known]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter "
                           f"ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return groups


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Run the block with ``optimizer`` on ``swapin_parameters`` and ``swapin_optim_state``
    (see the module docstring); the live parameters, hyperparameters and state come back on
    exit, also when the block raises."""
    groups = _checked_groups(optimizer, swapin_optim_state)
    tensors = list(swapin_parameters.values())
    per_group, offset = [], 0
    for group in groups:
        n = len(group["params"])
        if offset + n > len(tensors):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        per_group.append(tensors[offset:offset + n])
        offset += n
    saved_state = optimizer.state
    saved_groups = [dict(g) for g in optimizer.param_groups]  # keeps each `params` list's identity
    try:
        new_state = defaultdict(dict)
        for live, group, params in zip(optimizer.param_groups, groups, per_group, strict=True):
            live.update({k: v for k, v in group.items() if k != "params"})
            live["params"] = params
            for p, pid in zip(params, group["params"], strict=True):
                new_state[p] = dict(swapin_optim_state["state"].get(pid, {}))
        optimizer.state = new_state
        yield
    finally:
        for live, saved in zip(optimizer.param_groups, saved_groups, strict=True):
            live.clear()
            live.update(saved)
        optimizer.state = saved_state
