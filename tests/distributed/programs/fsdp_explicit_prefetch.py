"""``set_modules_to_forward_prefetch`` / ``set_modules_to_backward_prefetch`` (PyTorch FSDP2's
explicit prefetching) on 2 ranks: with each layer prefetching the next two (forward) and the
previous two (backward), the all-gathers of those units have started when the layer's own
forward / backward begins (the implicit order starts only one), and 3 Adam steps give the
same parameters as without the hints. A module that is not fully_shard-ed, or a bare module
instead of a list, is refused before anything changes."""

from __future__ import annotations

import numpy as np

import shardflow as sf
from shardflow import distributed as dist
from shardflow import nn
from shardflow.distributed.fsdp import fully_shard
from shardflow.distributed.fsdp._param_group import SHARDED

from ._common import close, raises

N_LAYERS, D, BATCH = 4, 6, 3


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(D, D) for _ in range(N_LAYERS))
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return self.head(x)


def _in_flight(layer) -> bool:
    """Its all-gather has started (or finished): it is no longer only sharded."""
    g = layer._fsdp_state.group
    return g.gather_work is not None or g.state != SHARDED


def _train(explicit: bool, rank: int):
    sf.manual_seed(0)
    m = Stack()
    for layer in m.layers:
        fully_shard(layer)
    fully_shard(m)
    seen = {"forward": [], "backward": []}
    if explicit:
        for i, layer in enumerate(m.layers):
            layer.set_modules_to_forward_prefetch([m.layers[j] for j in (i + 1, i + 2) if j < N_LAYERS])
            layer.set_modules_to_backward_prefetch([m.layers[j] for j in (i - 1, i - 2) if j >= 0])
    # forward: after layer 0's forward, is layer 2 being gathered (the implicit order starts
    # only layer 1)? backward: when the gradient of layer 3's input arrives (after layer 3's
    # pre-backward, before layer 2's), is layer 1 being gathered (implicitly only layer 2)?
    m.layers[0].register_forward_hook(lambda mod, a, out: seen["forward"].append(_in_flight(m.layers[2])))
    m.layers[3].register_forward_pre_hook(lambda mod, args: args[0].register_hook(
        lambda g: seen["backward"].append(_in_flight(m.layers[1]))) and None)
    opt = sf.optim.Adam(m.parameters(), lr=0.05)
    rng = np.random.default_rng(rank)
    for _ in range(3):
        x = sf.tensor(rng.standard_normal((BATCH, D)).astype(np.float32))
        y = m(x)
        (y ** 2).mean().backward()
        opt.step()
        opt.zero_grad()
    return {k: v.full_tensor().numpy() for k, v in m.state_dict().items()}, seen, m


def main(argv):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    plain, implicit, _ = _train(False, rank)
    hinted, seen, m = _train(True, rank)
    assert implicit == {"forward": [False] * 3, "backward": [False] * 3}, implicit
    assert seen == {"forward": [True] * 3, "backward": [True] * 3}, seen
    for k in plain:
        close(hinted[k], plain[k], k, tol=0)

    raises(ValueError, lambda: m.layers[0].set_modules_to_forward_prefetch([nn.Linear(2, 2)]),
           "expects FSDPModule but got Linear at position 0", "fully_shard")
    raises(TypeError, lambda: m.layers[0].set_modules_to_backward_prefetch(m.layers[1]),
           "expects a list of FSDPModules")
    dist.destroy_process_group()
