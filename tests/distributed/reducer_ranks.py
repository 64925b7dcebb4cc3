"""Rank program of ``test_reducer.py``: the shared gradient ``Reducer`` on real ranks.

Every rank computes its local gradients of a small MLP on its own batch; the reference for
each check is the mean (or sum) of every rank's local gradients, gathered with
``all_gather_object``: the single-process computation data parallelism must reproduce.
Each check prints ``PASS <name> <rank>``; a failed assertion ends the job with its message.
"""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow import comm
from shardflow.nn.parallel.reducer import Reducer, reducers_of

world = comm.get_world()
r, W = world.rank, world.size


def make():
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))


def batch(step):
    g = np.random.default_rng(100 * step + r)
    n = 4 + r  # uneven local batches
    return (sf.tensor(g.standard_normal((n, 6)).astype(np.float32)),
            sf.tensor(g.standard_normal((n, 3)).astype(np.float32)))


def backward(model, step):
    x, y = batch(step)
    F.mse_loss(model(x), y).backward()


def local_grads(steps):
    """This rank's gradients summed over ``steps``, without any reducer."""
    model = make()
    for s in steps:
        backward(model, s)
    return [p.grad.numpy().copy() for p in model.parameters()]


def over_ranks(grads, how):
    every = world.all_gather_object(grads)
    return [getattr(np, how)([g[i] for g in every], axis=0) for i in range(len(grads))]


def assert_grads(model, want, what):
    for i, (p, w) in enumerate(zip(model.parameters(), want)):
        got = p.grad.numpy()
        assert np.allclose(got, w, rtol=1e-5, atol=1e-6), (what, i, np.abs(got - w).max())


def passed(name):
    print(f"PASS {name} {r}", flush=True)


# -- bucketing order: reverse registration order, the first bucket under its own cap ------
model = make()
params = list(model.parameters())  # bytes: w0 384, b0 64, w1 512, b1 32, w2 96, b2 12
red = Reducer(params, world, bucket_cap_mb=600 / 2**20, first_bucket_cap_mb=100 / 2**20)
position = {id(p): i for i, p in enumerate(params)}
layout = [[position[id(p)] for p in b.params] for b in red.buckets]
assert layout == [[5], [4, 3], [2, 1], [0]], layout
assert red.bucket_sizes() == [3, 24 + 8, 128 + 16, 96], red.bucket_sizes()
assert reducers_of(params[0]) == [red]
red.remove_hooks()
assert reducers_of(params[0]) == []
passed("bucket_order")

# -- overlap: the first bucket starts inside backward; backward returns averaged grads ------
model = make()
red = Reducer(model.parameters(), world, bucket_cap_mb=600 / 2**20, first_bucket_cap_mb=100 / 2**20)
missing_at_launch = []
red.register_launch_hook(lambda b: missing_at_launch.append(
    sum(p.grad is None for p in model.parameters())))
backward(model, 0)
assert len(missing_at_launch) == 4, missing_at_launch
# the first layer's weight gets its gradient last: the first buckets went out before it
assert missing_at_launch[0] >= 1 and missing_at_launch[-1] == 0, missing_at_launch
assert not red.touched and red.stats["backward_waits"] == 1
assert_grads(model, over_ranks(local_grads([0]), "mean"), "overlap")
passed("overlap")

# -- no_sync: local accumulation, reduced by the next synchronised backward ----------------
model = make()
red = Reducer(model.parameters(), world, bucket_cap_mb=600 / 2**20)
with red.no_sync():
    backward(model, 1)
assert not red.touched
assert_grads(model, local_grads([1]), "no_sync left local gradients")
backward(model, 2)
assert_grads(model, over_ranks(local_grads([1, 2]), "mean"), "no_sync then sync")
passed("no_sync")

# -- communication hook: called once per bucket, in order, the last one flagged -------------
model = make()
red = Reducer(model.parameters(), world, bucket_cap_mb=600 / 2**20)
calls = []


def hook(state, bucket):
    calls.append((bucket.index(), bucket.is_last(), len(bucket.parameters())))
    flat = bucket.buffer().array
    work = state.all_reduce(flat, "avg", async_op=True)

    class Done:
        def wait(self):
            work.wait()
            return flat
    return Done()


red.register_comm_hook(world, hook)
for step in (3, 4):
    calls.clear()
    model.zero_grad()
    backward(model, step)
    n = len(red.buckets)
    assert [c[0] for c in calls] == list(range(n)), calls
    assert [c[1] for c in calls] == [False] * (n - 1) + [True], calls
    assert sum(c[2] for c in calls) == len(list(model.parameters()))
    assert_grads(model, over_ranks(local_grads([step]), "mean"), "comm hook")
passed("comm_hook_once_per_bucket")

# -- pieces: a bucket's all-reduce goes out piece by piece, each once its parameters are in --
class Recording:
    """The world, recording each all_reduce's size and how many gradients were missing then."""

    def __init__(self, inner, model):
        self.inner, self.model, self.calls = inner, model, []
        self.rank, self.size = inner.rank, inner.size

    def all_reduce(self, array, op, async_op=False):
        self.calls.append((array.size, sum(p.grad is None for p in self.model.parameters()),
                           np.shares_memory(array, red.buckets[0].flat)))
        return self.inner.all_reduce(array, op, async_op=async_op)

    def progress(self):
        self.inner.progress()


model = make()
rec = Recording(world, model)
# one bucket of every parameter (275 float32, 2 KB cap), in pieces of at most 16; bucket
# order b2 (3), w2 (24), b1 (8), w1 (128), b0 (16), w0 (96): parameters of 4 elements or more
# get pieces of their own and are reduced in place in p.grad, b2 is packed in the bucket
red = Reducer(model.parameters(), rec, bucket_cap_mb=2**-9, first_bucket_cap_mb=2**-9,
              piece_cap_mb=64 / 2**20)
want = [3, 16, 8, 8] + [16] * 8 + [16] + [16] * 6
assert len(red.buckets) == 1 and red.piece_sizes() == [want], red.piece_sizes()
for step in (8, 9):
    model.zero_grad(set_to_none=True)
    rec.calls.clear()
    backward(model, step)
    assert [c[0] for c in rec.calls] == want, rec.calls
    assert [c[2] for c in rec.calls] == [True] + [False] * (len(want) - 1), rec.calls
    assert rec.calls[0][1] >= 1, rec.calls  # the first piece went out inside backward
    assert red.stats["launches"] == step - 7  # launch hooks and counters see buckets
    assert_grads(model, over_ranks(local_grads([step]), "mean"), "pieces")
# a communication hook still gets whole buckets, whatever the pieces
calls.clear()
red.set_piece_bytes(8)
red.register_comm_hook(world, hook)
model.zero_grad(set_to_none=True)
backward(model, 10)
assert [c[0] for c in calls] == [0] and calls[0][2] == 6, calls
assert_grads(model, over_ranks(local_grads([10]), "mean"), "pieces with a comm hook")
try:
    red.set_piece_bytes(0)
except ValueError as e:
    assert "positive byte count, got 0" in str(e), e
else:
    raise AssertionError("set_piece_bytes(0) must raise")
passed("pieces")

# -- finalize by the caller (Horovod's step()): launched in backward, written at finalize --
model = make()
red = Reducer(model.parameters(), world, bucket_cap_mb=600 / 2**20, finalize_in_backward=False)
backward(model, 5)
assert red.touched and red.stats["launches"] == len(red.buckets)
assert_grads(model, local_grads([5]), "before finalize: local")
red.finalize()
assert not red.touched
assert_grads(model, over_ranks(local_grads([5]), "mean"), "after finalize")
passed("manual_finalize")

# -- a parameter without a gradient: its bucket still goes out at finalize; .grad stays None -
# buckets (reverse order, 600 bytes): [b2, w2, b1], [w1, b0], [w0]; the last Linear (w2, b2)
# is not used, so the first bucket is incomplete after backward and blocks the others
model = make()
red = Reducer(model.parameters(), world, bucket_cap_mb=600 / 2**20, finalize_in_backward=False)


def unused_last(m, x):
    return m[3](m[2](m[1](m[0](x)))).sum(1, keepdim=True).expand(-1, 3)


x, y = batch(6)
F.mse_loss(unused_last(model, x), y).backward()
assert red.touched and red.stats["launches"] == 0
red.finalize()
assert red.stats["launches"] == 3
assert model[4].weight.grad is None and model[4].bias.grad is None
ref = make()
F.mse_loss(unused_last(ref, x), y).backward()
want = over_ranks([p.grad.numpy().copy() for p in list(ref.parameters())[:4]], "mean")
for p, w in zip(list(model.parameters())[:4], want):
    assert np.allclose(p.grad.numpy(), w, rtol=1e-5, atol=1e-6)
passed("unused_parameter_at_finalize")

# -- the after-backward form with op="sum" (tf.distribute's convention) --------------------
model = make()
backward(model, 7)
red = Reducer(model.parameters(), world, op="sum", hooks=False, finalize_in_backward=False)
red.reduce_gradients()
assert_grads(model, over_ranks(local_grads([7]), "sum"), "reduce_gradients sum")
model.zero_grad()
try:
    red.reduce_gradients()
except RuntimeError as e:
    assert "6 parameter(s) have no .grad" in str(e) and "<parameter 0>" in str(e), e
else:
    raise AssertionError("reduce_gradients without gradients must raise")
passed("reduce_gradients_sum")

print(f"ALL OK {r}", flush=True)
