"""FSDP2's meta-device init under ``fully_shard`` (2 ranks): a model built under
``with device("meta")`` is sharded (meta shards laid out ``S(0)``), refused with a clear error
until it has data, then materialised either by ``to_empty(device="cpu")`` +
``reset_parameters()`` or by ``load_state_dict(sd, strict=False, assign=True)`` of DTensor
Parameters (``distribute_tensor`` of a whole checkpoint, as PyTorch's FSDP2 example's
``Checkpointer.load_model`` does). Either way the parameters stay global ``S(0)`` tensors,
Adam's state takes their layout, and 3 steps equal one process training the whole model on
the two ranks' batches together."""

from __future__ import annotations

import numpy as np

import shardflow as sf
from shardflow import distributed as dist
from shardflow import nn
from shardflow.distributed.fsdp import fully_shard
from shardflow.distributed.tensor import Shard, distribute_tensor

from ._common import close, raises

D_IN, D_HID, D_OUT, BATCH = 4, 6, 3, 5


def _build():
    return nn.Sequential(nn.Linear(D_IN, D_HID), nn.Tanh(), nn.Linear(D_HID, D_OUT))


def _shard(m):
    fully_shard(m[0])
    fully_shard(m)
    return m


def _batches(step):
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((2, BATCH, D_IN)).astype(np.float32)  # (ranks, B, D_IN)


def _train(m, rank, steps=3):
    """``steps`` Adam steps; ``rank=None`` is one process on both ranks' batches."""
    opt = sf.optim.Adam(m.parameters(), lr=0.05)
    for step in range(steps):
        xs = _batches(step)
        x = xs.reshape(-1, D_IN) if rank is None else xs[rank]
        (m(sf.tensor(x)) ** 2).mean().backward()
        opt.step()
        opt.zero_grad()
    return opt


def _whole(m):
    return {k: v.full_tensor().numpy() for k, v in m.state_dict().items()}


def _check_sharded(m, what):
    for name, p in m.named_parameters():
        assert p.is_global and p.placements == (Shard(0),), f"{what}: {name} is {p.placements}"
        assert p.device.type == "cpu", f"{what}: {name} on {p.device}"


def main(argv):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    sf.manual_seed(0)
    ref = _build()
    full = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    _train(ref, None)
    want = {k: v.numpy() for k, v in ref.state_dict().items()}

    # -- meta model: sharded shapes, no data; using it before it has data is refused
    with sf.device("meta"):
        m = _build()
    _shard(m)
    w = m[0].weight
    assert w.device.type == "meta" and w.is_global and w.placements == (Shard(0),)
    assert tuple(w.shape) == (D_HID, D_IN) and tuple(w.to_local().shape) == (D_HID // 2, D_IN)
    raises(RuntimeError, lambda: m(sf.ones(2, D_IN)), "meta device", "to_empty", "assign=True")

    # -- the FSDP2 example's resume: DTensor Parameters of the whole checkpoint, assign=True
    meta_sd = m.state_dict()
    sharded_sd = {k: nn.Parameter(distribute_tensor(sf.tensor(v), meta_sd[k].device_mesh,
                                                    meta_sd[k].placements))
                  for k, v in full.items()}
    m.load_state_dict(sharded_sd, strict=False, assign=True)
    _check_sharded(m, "after assign")
    assert m[0].weight is w, "assign=True keeps the fully_shard-ed parameter object"
    for k, v in _whole(m).items():
        close(v, full[k], f"loaded {k}")
    opt = _train(m, rank)
    for k, v in _whole(m).items():
        close(v, want[k], f"assign-loaded model after training: {k}", tol=1e-5)
    for p in m.parameters():
        exp_avg = opt.state[p]["exp_avg"]
        assert exp_avg.is_global and exp_avg.placements == p.placements
        assert tuple(exp_avg.to_local().shape) == tuple(p.to_local().shape)

    # -- to_empty + reset_parameters: the shards get memory on the CPU and are initialised
    with sf.device("meta"):
        m2 = _build()
    _shard(m2)
    m2.to_empty(device="cpu")
    sf.manual_seed(1)
    for mod in m2.modules():
        if isinstance(mod, nn.Linear):
            mod.reset_parameters()
    _check_sharded(m2, "after to_empty")
    # each rank's shard is drawn from the same seed with the shard's shape: its rows are the
    # first rows of the whole weight one process draws (PyTorch's DTensor init on a CPU mesh
    # does the same: checked with torch 2.13 on gloo)
    sf.manual_seed(1)
    whole_w = nn.Linear(D_IN, D_HID).weight.numpy()
    close(m2[0].weight.to_local().numpy(), whole_w[: D_HID // 2], "to_empty + reset_parameters shard")
    init = _whole(m2)
    bound = 1 / np.sqrt(D_IN)
    assert np.all(np.abs(init["0.bias"]) <= bound) and np.any(init["0.bias"] != 0)
    one = _build()
    one.load_state_dict({k: sf.tensor(v) for k, v in init.items()})
    _train(one, None)
    _train(m2, rank)
    for k, v in _whole(m2).items():
        close(v, one.state_dict()[k].numpy(), f"to_empty model after training: {k}", tol=1e-5)
    dist.destroy_process_group()
