"""``Module.load_state_dict`` into a ``fully_shard`` model (2 ranks): values are compared by
their logical (whole) shape, so a plain tensor of one rank's rows is refused before anything
changes (it used to load silently), a whole plain tensor keeps this rank's part, a global
value of another layout is re-laid out, and ``assign=True`` keeps the sharded parameters."""

from __future__ import annotations

import numpy as np

import shardflow as sf
from shardflow import distributed as dist
from shardflow import nn
from shardflow.distributed.fsdp import fully_shard

from ._common import close, raises


def _model(seed):
    sf.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))


def _whole(m):
    return {k: v.full_tensor().numpy() if v.is_global else v.numpy() for k, v in m.state_dict().items()}


def main(argv):
    dist.init_process_group("gloo")
    m = fully_shard(_model(0))
    before = _whole(m)
    weight = m[0].weight
    assert weight.is_global and tuple(weight.shape) == (6, 4) and tuple(weight.to_local().shape) == (3, 4)

    # this rank's rows as plain tensors: refused, and nothing changes
    shards = {k: sf.tensor(v.to_local().numpy()) if v.is_global else v for k, v in m.state_dict().items()}
    raises(RuntimeError, lambda: m.load_state_dict(shards), "size mismatch for 0.weight",
           "global tensor of shape (6, 4)", "got a plain tensor of shape (3, 4)", "from_local")
    for k, v in _whole(m).items():
        close(v, before[k], k)

    # whole plain tensors (another model's): each rank keeps its part
    other = _whole(_model(1))
    m.load_state_dict({k: sf.tensor(v) for k, v in other.items()})
    for k, v in _whole(m).items():
        close(v, other[k], k)
    assert m[0].weight is weight and weight.is_global and str(weight.sbp) == "(S(0),)"

    # global values of the same layout (another sharded model's state_dict), then of another
    # layout (broadcast): both load; assign=True keeps the parameter objects and layout
    third = fully_shard(_model(2))
    m.load_state_dict(third.state_dict())
    for k, v in _whole(m).items():
        close(v, _whole(third)[k], k)
    bcast = {k: v.to_global(sbp=sf.distributed.sbp.broadcast) if v.is_global else v
             for k, v in fully_shard(_model(3)).state_dict().items()}
    m.load_state_dict(bcast, assign=True)
    assert m[0].weight is weight and str(weight.sbp) == "(S(0),)"
    for k, v in _whole(m).items():
        close(v, _whole(fully_shard(_model(3)))[k], k)

    # a global value of another logical shape names both shapes
    wrong = fully_shard(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))).state_dict()
    raises(RuntimeError, lambda: m.load_state_dict(wrong), "size mismatch for 0.weight",
           "shape (8, 4)", "(6, 4)")
    assert np.isfinite(m(sf.ones(2, 4)).to_local().numpy()).all()
