"""Background MPI progress (``comm/mpi_progress.py``) on real ranks.

1. An async all_reduce large enough for MPI's own collective (4 MB) completes while the
   main thread only sleeps (no MPI call of its own): the progress thread drove it. Without
   the thread it stays incomplete (Open MPI progresses only inside MPI calls).
2. With the thread on, the main thread keeps calling: async and blocking all_reduces of
   several sizes, and send/recv, interleaved; every result is checked (the comm layer's
   state is shared with the thread under one lock).
3. DDP holds the thread while its buckets are in flight (a hook on the last gradient of
   backward sees it running), releases it when backward returns, and its gradients are the
   mean of every rank's local gradients.
4. The program returns with the thread held again: the job must still end normally
   (the thread is stopped before ``MPI_Finalize``).
Prints ``PASS <check> <rank>``."""

import time

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow import comm
from shardflow.comm import mpi_progress
from shardflow.nn.parallel import DistributedDataParallel as DDP


def main(argv):
    world = comm.init()
    r, W = world.rank, world.size

    # 1. progress without the main thread
    buf = np.full(1 << 20, r + 1, np.float32)
    work = world.all_reduce(buf, "sum", async_op=True)
    world.background_progress(True)
    deadline = time.monotonic() + 20
    while not work.done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert work.done, "the async all_reduce did not complete while the main thread slept"
    work.wait()
    assert np.all(buf == W * (W + 1) / 2), buf[:4]
    world.background_progress(False)
    print(f"PASS alone {r}", flush=True)

    # 2. the main thread keeps communicating while the thread polls
    world.background_progress(True)
    for i in range(30):
        big = np.full((1 << 18) + i, float(r + i), np.float32)  # large path, async
        w1 = world.all_reduce(big, "avg", async_op=True)
        small = np.array([r + i], np.int64)
        world.all_reduce(small, "sum")  # blocking, small path, while w1 is in flight
        assert small[0] == sum(k + i for k in range(W)), (i, small)
        if W > 1:
            got = np.empty(64, np.float32)
            if r == 0:
                world.send(np.full(64, i, np.float32), 1, tag=i)
            elif r == 1:
                world.recv(got, 0, tag=i)
                assert np.all(got == i), (i, got[:4])
        w1.wait()
        assert np.allclose(big, np.mean([k + i for k in range(W)])), (i, big[:4])
    world.background_progress(False)
    print(f"PASS interleaved {r}", flush=True)

    # 3. DDP holds the thread during backward only
    sf.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 4))
    ddp = DDP(model)
    ddp.reducer.set_piece_bytes(256)
    seen = []
    model[0].weight.register_post_accumulate_grad_hook(
        lambda p: seen.append(mpi_progress.is_running()))
    g = np.random.default_rng(r)
    x = sf.tensor(g.standard_normal((5, 8)).astype(np.float32))
    y = sf.tensor(g.standard_normal((5, 4)).astype(np.float32))
    F.mse_loss(ddp(x), y).backward()
    assert seen == [True], seen
    assert not mpi_progress.is_running()
    ref = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 4))
    for p, q in zip(ref.parameters(), model.parameters()):
        p.array[...] = q.array
    F.mse_loss(ref(x), y).backward()
    every = world.all_gather_object([p.grad.numpy() for p in ref.parameters()])
    for i, p in enumerate(model.parameters()):
        want = np.mean([e[i] for e in every], axis=0)
        assert np.allclose(p.grad.numpy(), want, rtol=1e-5, atol=1e-6), i
    print(f"PASS ddp {r}", flush=True)

    # 4. exit with the thread held
    world.background_progress(True)
    assert mpi_progress.is_running()
    print(f"PASS exit_held {r}", flush=True)
