"""DCP with ``Stateful`` values and rank-0-only optimizer state of a ``fully_shard`` model
(2 ranks).

1. ``dcp.save({"app": AppState(model, opt)})`` (PyTorch's DCP tutorial wrapper, a
   ``Stateful`` calling ``get_state_dict``/``set_state_dict``) and a ``Module`` given as a
   value: save calls their ``state_dict()``, ``dcp.load`` loads into it and calls
   ``load_state_dict``; a fresh model and Adam resumed that way train on exactly as the
   original.
2. ``opt.state_dict()`` on rank 0 alone returns at once (no collective: PyTorch's DTensor
   state is local too); its sharded state is this rank's part (``to_local``). The whole
   state for a one-file save comes from ``get_optimizer_state_dict(..., full_state_dict)``
   called on every rank, then saved by rank 0.
"""

from __future__ import annotations

import time

import numpy as np

import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow import distributed as dist
from shardflow import nn
from shardflow.distributed.checkpoint.state_dict import StateDictOptions
from shardflow.distributed.checkpoint.stateful import Stateful
from shardflow.distributed.fsdp import fully_shard

from ._common import close


class AppState(Stateful):
    """PyTorch's DCP tutorial: model and optimizer behind one Stateful."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def state_dict(self):
        model_sd, optim_sd = dcp.get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd}

    def load_state_dict(self, state_dict):
        dcp.set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                           optim_state_dict=state_dict["optim"])


class Counter:  # Stateful by its methods alone (a Protocol), no base class
    def __init__(self, n=0):
        self.n = n

    def state_dict(self):
        return {"n": self.n}

    def load_state_dict(self, sd):
        self.n = int(sd["n"])


def _model(seed):
    sf.manual_seed(seed)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    fully_shard(m[0])
    fully_shard(m)
    return m, sf.optim.Adam(m.parameters(), lr=0.05)


def _steps(m, opt, rank, start, n):
    for step in range(start, start + n):
        x = np.random.default_rng(10 * step + rank).standard_normal((3, 4)).astype(np.float32)
        (m(sf.tensor(x)) ** 2).mean().backward()
        opt.step()
        opt.zero_grad()


def _whole(m):
    return {k: v.full_tensor().numpy() for k, v in m.state_dict().items()}


def main(argv):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    folder = argv[0]
    assert isinstance(AppState(None, None), Stateful) and isinstance(Counter(), Stateful)
    assert isinstance(nn.Linear(2, 2), Stateful) and not isinstance({"a": 1}, Stateful)

    # -- 1. Stateful values through dcp.save / dcp.load
    m, opt = _model(0)
    _steps(m, opt, rank, 0, 2)
    dcp.save({"app": AppState(m, opt), "counter": Counter(7), "step": 2}, checkpoint_id=f"{folder}/ckpt")
    _steps(m, opt, rank, 2, 2)
    want = _whole(m)

    m2, opt2 = _model(1)
    _steps(m2, opt2, rank, 5, 1)  # some other state, overwritten by the load
    counter = Counter()
    state = {"app": AppState(m2, opt2), "counter": counter, "step": 0}
    dcp.load(state, checkpoint_id=f"{folder}/ckpt")
    assert counter.n == 7 and state["step"] == 2, (counter.n, state["step"])
    assert isinstance(state["app"], AppState) and state["counter"] is counter  # kept, loaded into
    _steps(m2, opt2, rank, 2, 2)
    for k, v in _whole(m2).items():
        close(v, want[k], f"resumed through Stateful: {k}", tol=1e-6)

    # -- 2. opt.state_dict() on rank 0 only: local, returns at once
    if rank == 0:
        t0 = time.monotonic()
        sd = opt.state_dict()
        took = time.monotonic() - t0
        assert took < 2.0, f"opt.state_dict() on rank 0 alone took {took:.1f}s"
        w = m[0].weight
        exp_avg = sd["state"][0]["exp_avg"]
        assert exp_avg.is_global and exp_avg.placements == w.placements
        assert tuple(exp_avg.to_local().shape) == tuple(w.to_local().shape) == (3, 4)
    full = dcp.get_optimizer_state_dict(m, opt, options=StateDictOptions(full_state_dict=True,
                                                                          cpu_offload=True))
    if rank == 0:
        sf.save(full, f"{folder}/optim.pt")
    dist.barrier()
    loaded = sf.load(f"{folder}/optim.pt")
    for name, p in m.named_parameters():
        whole = p.full_tensor().numpy()
        got = np.asarray(loaded["state"][name]["exp_avg"])
        assert got.shape == whole.shape, (name, got.shape)
        close(got, opt.state[p]["exp_avg"].full_tensor().numpy(), f"saved exp_avg of {name}")
    dist.destroy_process_group()
