"""``fully_shard(..., mp_policy=MixedPrecisionPolicy(...))`` on 2 ranks against one process doing
the same casts: the shards (float32) are what Adam updates; forward and backward run on the
parameters cast to ``param_dtype`` (the input cast to it too: ``cast_forward_inputs``); each
rank's gradients are cast to ``reduce_dtype`` and averaged over the ranks (as MPI does for
half types: in float32, rounded to ``reduce_dtype``), then stored as float32 gradients; the
root's output is cast to ``output_dtype``. Three Adam steps, for bfloat16 and float16."""

from __future__ import annotations

import numpy as np

import shardflow as sf
from shardflow import distributed as dist
from shardflow import nn
from shardflow.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from ._common import close

D_IN, D_HID, D_OUT, BATCH, STEPS = 4, 8, 3, 5, 3
CASES = [  # (param_dtype, reduce_dtype, output_dtype)
    (sf.bfloat16, sf.float32, sf.float32),
    (sf.bfloat16, None, None),
    (sf.float16, sf.float16, sf.float32),
]


def _build(seed=0):
    sf.manual_seed(seed)
    return nn.Sequential(nn.Linear(D_IN, D_HID), nn.Tanh(), nn.Linear(D_HID, D_OUT))


def _batch(step, rank):
    rng = np.random.default_rng(10 * step + rank)
    return rng.standard_normal((BATCH, D_IN)).astype(np.float32)


def _np(d):
    return None if d is None else d.np


def _reference(pd, rd, od):
    """One process: the float32 model and Adam; per step each rank's gradient computed by a
    ``pd`` copy of the model, averaged in float32 and rounded to ``rd`` (default ``pd``)."""
    master = _build()
    opt = sf.optim.Adam(master.parameters(), lr=0.05)
    rd_np = _np(rd or pd)
    for step in range(STEPS):
        grads = []
        for rank in range(2):
            copy = _build().to(pd)
            copy.load_state_dict({k: sf.tensor(v.numpy().astype(_np(pd))) for k, v in master.state_dict().items()})
            y = copy(sf.tensor(_batch(step, rank)).to(pd))
            if od is not None:
                y = y.to(od)
            (y.float() ** 2).mean().backward()
            grads.append([p.grad.numpy().astype(rd_np).astype(np.float32) for p in copy.parameters()])
        for p, g0, g1 in zip(master.parameters(), *grads):
            p.grad = sf.tensor(((g0 + g1) / 2).astype(rd_np).astype(np.float32))
        opt.step()
        opt.zero_grad()
    return {k: v.numpy() for k, v in master.state_dict().items()}


def _sharded(pd, rd, od, rank):
    m = _build()
    inner = MixedPrecisionPolicy(param_dtype=pd, reduce_dtype=rd)
    fully_shard(m[0], mp_policy=inner)
    fully_shard(m, mp_policy=MixedPrecisionPolicy(param_dtype=pd, reduce_dtype=rd, output_dtype=od))
    opt = sf.optim.Adam(m.parameters(), lr=0.05)
    for step in range(STEPS):
        y = m(sf.tensor(_batch(step, rank)))  # float32 input: cast to pd by the policy
        assert y.dtype == (od or pd), f"output dtype {y.dtype}, want {od or pd}"
        (y.float() ** 2).mean().backward()
        for name, p in m.named_parameters():  # sharded float32 parameters and gradients
            assert p.is_global and p.dtype == sf.float32, (name, p.dtype)
            assert p.grad.is_global and p.grad.dtype == sf.float32, (name, p.grad.dtype)
        opt.step()
        opt.zero_grad()
    m[0].unshard()
    assert all(p.dtype == pd for p in m[0].parameters()), "gathered parameters are param_dtype"
    m[0].reshard()
    assert all(p.dtype == sf.float32 for p in m[0].parameters())
    return {k: v.full_tensor().numpy() for k, v in m.state_dict().items()}


def main(argv):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for pd, rd, od in CASES:
        want = _reference(pd, rd, od)
        got = _sharded(pd, rd, od, rank)
        moved = max(float(np.abs(want[k] - _build().state_dict()[k].numpy()).max()) for k in want)
        assert moved > 1e-2, "the reference trained"
        for k in want:
            close(got[k], want[k], f"{pd}/{rd}/{od}: {k}", tol=1e-5)
    dist.destroy_process_group()
