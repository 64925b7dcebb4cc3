"""``shardflow.compile_step`` on a DistributedDataParallel model, in real ranks: the
compiled step against the eager DDP step of a twin model (docs/KERNELS.md, compile_step).

Each rank holds two DDP models with the same weights: one stepped eagerly, one through
``compile_step``. Every step both must give the same loss, the same averaged gradients and
the same parameters (float32, 1e-5), and the compiled model must be identical on every rank.
Batches are uneven (rank r has 3 + 2r rows) and change size at step 3 on rank 1 only, so that
rank compiles a second plan while rank 0 replays: their collectives must still match. The
buckets are small (several per model); "module" compiles ``ddp.module`` (DDP's hooks on its
parameters, found through them, and no DDP forward), and a communication hook records, for each bucket
launch, how many parameters still had no gradient: the first bucket must start inside the
backward (before the first layer's gradient exists), as eager DDP starts it.
"""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

SCRIPT = r"""
import sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.distributed.algorithms.ddp_comm_hooks import default_hooks
from shardflow.nn.parallel import DistributedDataParallel as DDP
from shardflow.jit import compile_step
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
variant = sys.argv[1]

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(),
                                  nn.Linear(8, 3))
        if variant == "unused":
            self.spare = nn.Linear(6, 3)  # never used: find_unused_parameters marks it
    def forward(self, x):
        return self.body(x)

def batch(step):
    g = np.random.default_rng(1000 * step + r)
    n = 3 + 2 * r + (2 if (step >= 3 and r == 1) else 0)
    return (sf.from_numpy(g.standard_normal((n, 6)).astype(np.float32)),
            sf.from_numpy(g.standard_normal((n, 3)).astype(np.float32)))

def mse(m, x, y):
    return F.mse_loss(m(x), y)

kw = dict(bucket_cap_mb=0.0004)  # ~400 bytes: several buckets
if variant == "unused":
    kw["find_unused_parameters"] = True
if variant == "view":
    kw["gradient_as_bucket_view"] = True
sf.manual_seed(1 + r)  # DDP broadcasts rank 0's weights
a, b = Net(), Net()
b.load_state_dict(a.state_dict())
da, db = DDP(a, **kw), DDP(b, **kw)
b.load_state_dict(a.state_dict())
launches = []
def recording_hook(state, bucket):
    launches.append(sum(p.grad is None for p in b.body.parameters()))
    return default_hooks.allreduce_hook(state, bucket)
if variant == "hook":
    da.register_comm_hook(None, default_hooks.allreduce_hook)
    db.register_comm_hook(None, recording_hook)
oa = sf.optim.SGD(a.parameters(), lr=0.1, momentum=0.9)
ob = sf.optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
if variant == "module":  # DDP's hooks on the parameters, its forward not called (eager alike)
    eager, step = compile_step(da.module, oa, mse), compile_step(db.module, ob, mse)
else:
    eager, step = compile_step(da, oa, mse), compile_step(db, ob, mse)
for s in range(5):
    x, y = batch(s)
    ref = eager.eager_step(x, y)
    if variant == "hook":
        launches.clear()
    loss = step(x, y)
    assert np.allclose(float(loss), float(ref), rtol=1e-6), (s, float(loss), float(ref))
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert (p.grad is None) == (q.grad is None), (s, name)
        assert np.allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6), (s, name)
        if p.grad is not None:
            assert np.allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6), (s, name)
    if variant == "hook" and s > 0:
        assert len(launches) == len(db.bucket_sizes()) >= 3, launches
        assert launches[0] > 0, launches  # the first bucket started inside the backward
objs = [None] * W
dist.all_gather_object(objs, [p.numpy().copy() for p in b.parameters()])
for other in objs:
    for u, v in zip(other, objs[0]):
        assert np.array_equal(u, v)
st = step.stats
expect_traces = 1 + (r == 1)
assert st["traces"] == expect_traces and st["eager"] == 0, (st, step.explain())
assert st["replays"] == 5 - expect_traces, st
assert "gradient buckets all-reduced from the backward schedule" in step.explain()
if variant == "unused":
    assert b.spare.weight.grad is not None and not b.spare.weight.grad.numpy().any()
print("OK", r)
"""


@pytest.mark.parametrize("variant", ["plain", "unused", "view", "hook", "module"])
def test_compiled_ddp_step_equals_eager_ddp(variant):
    res = run_mpi(SCRIPT, n=2, timeout=90, args=[variant]).check()
    assert res.stdout.count("OK") == 2, res.stdout
