"""``shardflow.compile_step`` on a DistributedDataParallel model against the eager DDP step
of a twin model, one check per ``argv`` variant (each with fresh models, in order):
``plain``, ``unused`` (``find_unused_parameters``, a never-used layer), ``view``
(``gradient_as_bucket_view``), ``hook`` (a comm hook recording how many parameters still
had no gradient at each bucket launch) and ``module`` (``compile_step(ddp.module)``).

Every step both must give the same loss, the same averaged gradients and the same
parameters (float32, 1e-5), and the compiled model must be identical on every rank. Batches
are uneven (rank r has 3 + 2r rows) and change size at step 3 on rank 1 only, so that rank
compiles a second plan while rank 0 replays: their collectives must still match. With the
hook, the first bucket must start inside the backward, as eager DDP starts it."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.distributed.algorithms.ddp_comm_hooks import default_hooks
from shardflow.jit import compile_step
from shardflow.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self, spare):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(),
                                  nn.Linear(8, 3))
        if spare:
            self.spare = nn.Linear(6, 3)  # never used: find_unused_parameters marks it

    def forward(self, x):
        return self.body(x)


def batch(step, r):
    g = np.random.default_rng(1000 * step + r)
    n = 3 + 2 * r + (2 if (step >= 3 and r == 1) else 0)
    return (sf.from_numpy(g.standard_normal((n, 6)).astype(np.float32)),
            sf.from_numpy(g.standard_normal((n, 3)).astype(np.float32)))


def mse(m, x, y):
    return F.mse_loss(m(x), y)


def check(variant, r, world):
    kw = dict(bucket_cap_mb=0.0004)  # ~400 bytes: several buckets
    if variant == "unused":
        kw["find_unused_parameters"] = True
    if variant == "view":
        kw["gradient_as_bucket_view"] = True
    sf.manual_seed(1 + r)  # DDP broadcasts rank 0's weights
    a, b = Net(variant == "unused"), Net(variant == "unused")
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
        x, y = batch(s, r)
        ref = eager.eager_step(x, y)
        if variant == "hook":
            launches.clear()
        loss = step(x, y)
        assert np.allclose(float(loss), float(ref), rtol=1e-6), (variant, s, float(loss), float(ref))
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            assert (p.grad is None) == (q.grad is None), (variant, s, name)
            assert np.allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6), (variant, s, name)
            if p.grad is not None:
                assert np.allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6), \
                    (variant, s, name, "grad")
        if variant == "hook" and s > 0:
            assert len(launches) == len(db.bucket_sizes()) >= 3, launches
            assert launches[0] > 0, launches  # the first bucket started inside the backward
    objs = [None] * world
    dist.all_gather_object(objs, [p.numpy().copy() for p in b.parameters()])
    for other in objs:
        for u, v in zip(other, objs[0]):
            assert np.array_equal(u, v), variant
    st = step.stats
    expect_traces = 1 + (r == 1)
    assert st["traces"] == expect_traces and st["eager"] == 0, (variant, st, step.explain())
    assert st["replays"] == 5 - expect_traces, (variant, st)
    assert "gradient buckets all-reduced from the backward schedule" in step.explain()
    if variant == "unused":
        assert b.spare.weight.grad is not None and not b.spare.weight.grad.numpy().any()


def main(argv):
    dist.init_process_group()
    r, world = dist.get_rank(), dist.get_world_size()
    for variant in argv:
        assert variant in ("plain", "unused", "view", "hook", "module"), variant
        check(variant, r, world)
