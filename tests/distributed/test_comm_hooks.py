"""DDP communication hooks on 2 real ranks: allreduce / fp16 / bf16 / PowerSGD results against
the uncompressed average and against PyTorch's hook math (computed here, in the test process,
with torch), and the bytes each hands to the comm layer (``CountingProcessGroup``).

One MPI job runs every variant (the ranks write their local gradients, reduced gradients,
byte counts and PowerSGD memories to ``.npz`` files); the checks run in the test process.
Each parameter gets its own bucket (``bucket_cap_mb`` tiny), so a bucket's PowerSGD memories
are those of one parameter.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

W = 2
STEPS = 4
START = 2  # PowerSGD's start_powerSGD_iter in the 'powersgd' variant

SCRIPT = r"""
import sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.nn.parallel import DistributedDataParallel as DDP
from shardflow import comm
from shardflow.distributed.algorithms import CountingProcessGroup
from shardflow.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as ps

dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
out_dir = sys.argv[1]
STEPS, START = int(sys.argv[2]), int(sys.argv[3])

def batch(rank, step, n=12):
    g = np.random.default_rng(1000 * step + rank)
    return g.standard_normal((n, 16)).astype(np.float32), g.standard_normal((n, 8)).astype(np.float32)

def make():
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 8))

def run(variant):
    model = make()
    counter = CountingProcessGroup(comm.get_world())
    ddp = DDP(model, process_group=counter, bucket_cap_mb=1e-9)  # one parameter per bucket
    assert len(ddp.bucket_sizes()) == 4
    state = None
    if variant == "allreduce":
        ddp.register_comm_hook(counter, default_hooks.allreduce_hook)
    elif variant in ("fp16", "bf16"):
        ddp.register_comm_hook(counter, getattr(default_hooks, variant + "_compress_hook"))
    elif variant == "powersgd":
        state = ps.PowerSGDState(counter, matrix_approximation_rank=1, start_powerSGD_iter=START)
        ddp.register_comm_hook(state, ps.powerSGD_hook)
    elif variant == "powersgd_full":
        state = ps.PowerSGDState(counter, matrix_approximation_rank=64, start_powerSGD_iter=0,
                                 min_compression_rate=0)
        ddp.register_comm_hook(state, ps.powerSGD_hook)
    opt = sf.optim.SGD(model.parameters(), lr=0.05)
    names = [n for n, _ in model.named_parameters()]
    rec = {}
    for step in range(STEPS):
        x, y = batch(r, step)
        opt.zero_grad()
        with ddp.no_sync():
            F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
        for n, p in model.named_parameters():
            rec[f"local/{step}/{n}"] = p.grad.numpy().copy()
        opt.zero_grad()
        counter.reset()
        F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
        rec[f"bytes/{step}"] = np.array(counter.total_bytes("all_reduce"))
        for n, p in model.named_parameters():
            rec[f"reduced/{step}/{n}"] = p.grad.numpy().copy()
        if state is not None:
            for b in ddp._buckets:
                n = names[[id(q) for q in model.parameters()].index(id(b.params[0]))]
                if b.index in state.error_dict:
                    rec[f"err/{step}/{n}"] = state.error_dict[b.index].reshape(b.params[0].shape).copy()
                if b.index in state.q_memory_dict:
                    rec[f"q/{step}/{n}"] = state.q_memory_dict[b.index].copy()
        opt.step()
    if state is not None:
        rec["stats"] = np.array(state.compression_stats())
    np.savez(f"{out_dir}/{variant}_rank{r}.npz", **rec)

def train(hook):
    # a short run that can fail: PowerSGD rank 4 must learn about as well as plain DDP
    # (measured: rank 1 reaches 0.29 where plain reaches 0.18 in 30 steps, rank 4 0.187)
    sf.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 8))
    ddp = DDP(model)
    if hook:
        ddp.register_comm_hook(ps.PowerSGDState(None, matrix_approximation_rank=4,
                                                start_powerSGD_iter=3), ps.powerSGD_hook)
    opt = sf.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = np.random.default_rng(7)
    T = g.standard_normal((16, 8)).astype(np.float32)
    losses = []
    for step in range(30):
        x = np.random.default_rng(100 * step + r).standard_normal((32, 16)).astype(np.float32)
        loss = F.mse_loss(ddp(sf.tensor(x)), sf.tensor(np.tanh(x @ T)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses

for v in ("none", "allreduce", "fp16", "bf16", "powersgd", "powersgd_full"):
    run(v)
plain, psgd = train(False), train(True)
np.savez(f"{out_dir}/train_rank{r}.npz", plain=np.array(plain), psgd=np.array(psgd))
print("ALL OK")
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("hooks")
    res = run_mpi(SCRIPT, n=W, timeout=120, args=[str(out), STEPS, START]).check()
    assert res.stdout.count("ALL OK") == W, res.output

    def load(variant):
        return [dict(np.load(os.path.join(out, f"{variant}_rank{r}.npz"))) for r in range(W)]

    return load


NAMES = ["0.weight", "0.bias", "2.weight", "2.bias"]


def _mean_local(recs, step, name):
    return sum(rec[f"local/{step}/{name}"] for rec in recs) / W


def test_allreduce_hook_is_bitwise_the_default_path(runs):
    base, hook = runs("none"), runs("allreduce")
    for step in range(STEPS):
        assert int(hook[0][f"bytes/{step}"]) == int(base[0][f"bytes/{step}"])
        for n in NAMES:
            assert np.array_equal(hook[0][f"reduced/{step}/{n}"], base[0][f"reduced/{step}/{n}"]), (step, n)
            np.testing.assert_allclose(base[0][f"reduced/{step}/{n}"], _mean_local(base, step, n),
                                       rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("variant,tdtype", [("fp16", torch.float16), ("bf16", torch.bfloat16)])
def test_low_precision_hooks_match_torch_math_and_halve_the_bytes(runs, variant, tdtype):
    base, recs = runs("none"), runs(variant)
    for step in range(STEPS):
        assert 2 * int(recs[0][f"bytes/{step}"]) == int(base[0][f"bytes/{step}"])
        for n in NAMES:
            # PyTorch's fp16_compress_hook: buffer.to(low).div_(W), all-reduce (sum), copy back
            parts = [torch.from_numpy(rec[f"local/{step}/{n}"]).to(tdtype).div_(W) for rec in recs]
            ref = (parts[0] + parts[1]).float().numpy()
            got = recs[0][f"reduced/{step}/{n}"]
            assert np.array_equal(got, ref), (variant, step, n, np.abs(got - ref).max())
            assert np.array_equal(recs[1][f"reduced/{step}/{n}"], got), "ranks disagree"
            exact = _mean_local(recs, step, n)
            assert np.abs(got - exact).max() <= 2 ** -7 * np.abs(exact).max() + 1e-6


def _torch_powersgd(recs, step, q_prev):
    """PyTorch's powerSGD_hook math on the per-rank inputs (local grad + error), in torch."""
    out = {}
    for n in NAMES:
        ms = [torch.from_numpy(rec[f"local/{step}/{n}"] + rec[f"err/{step - 1}/{n}"]) for rec in recs]
        if ms[0].ndim == 1:  # biases are not compressed: the plain average
            out[n] = (sum(ms) / W).numpy()
            continue
        q = torch.from_numpy(q_prev[n]).reshape(ms[0].shape[1], 1).clone()
        p = sum(m @ q for m in ms)  # all_reduce(SUM) of P
        _orthogonalize(p[None])
        q_new = sum(m.t() @ p for m in ms) / W  # all_reduce(SUM) of Q, then / W
        out[n] = (p @ q_new.t()).numpy()
    return out


def test_powersgd_matches_torch_math_and_counts_bytes(runs):
    base, recs = runs("none"), runs("powersgd")
    for step in range(START):  # before start_powerSGD_iter: the plain average
        assert int(recs[0][f"bytes/{step}"]) == int(base[0][f"bytes/{step}"])
        for n in NAMES:
            assert np.array_equal(recs[0][f"reduced/{step}/{n}"], base[0][f"reduced/{step}/{n}"])
    step = START + 1  # a warm-started step: Q from the previous step
    q_prev = {n: recs[0][f"q/{step - 1}/{n}"] for n in ("0.weight", "2.weight")}
    ref = _torch_powersgd(recs, step, q_prev)
    for n in NAMES:
        for rec in recs:
            np.testing.assert_allclose(rec[f"reduced/{step}/{n}"], ref[n], rtol=1e-4, atol=1e-6,
                                       err_msg=n)
    # bytes: P (n x 1) and Q (m x 1) per weight matrix, biases whole
    expected = 4 * ((32 + 16) + (8 + 32) + 32 + 8)
    plain = 4 * (32 * 16 + 32 + 8 * 32 + 8)
    assert int(recs[0][f"bytes/{step}"]) == expected and int(base[0][f"bytes/{step}"]) == plain
    rate, before, after = recs[0]["stats"]
    assert before == (STEPS - START) * (32 * 16 + 32 + 8 * 32 + 8)
    assert after == (STEPS - START) * ((32 + 16) + (8 + 32) + 32 + 8) and rate == before / after


def test_powersgd_error_feedback_keeps_the_sum_of_updates(runs):
    """Error feedback: sum of applied gradients + mean error = sum of true averages."""
    recs = runs("powersgd")
    last = STEPS - 1
    for n in NAMES:
        applied = sum(recs[0][f"reduced/{t}/{n}"] for t in range(START, STEPS))
        true = sum(_mean_local(recs, t, n) for t in range(START, STEPS))
        mean_err = sum(rec[f"err/{last}/{n}"] for rec in recs) / W
        np.testing.assert_allclose(applied + mean_err, true, rtol=1e-4, atol=1e-5, err_msg=n)
    assert any(np.abs(recs[0][f"err/{last}/{n}"]).max() > 1e-3 for n in ("0.weight", "2.weight")), \
        "rank-1 compression of these gradients must leave an error"


def test_powersgd_at_full_rank_is_the_exact_average(runs):
    recs = runs("powersgd_full")
    for step in range(STEPS):
        for n in NAMES:
            np.testing.assert_allclose(recs[0][f"reduced/{step}/{n}"], _mean_local(recs, step, n),
                                       rtol=1e-4, atol=1e-5, err_msg=f"{step} {n}")


def test_powersgd_training_tracks_plain_ddp(runs):
    train = runs("train")[0]
    plain, psgd = train["plain"], train["psgd"]
    assert plain[-1] < 0.6 * plain[0] and psgd[-1] < 0.6 * psgd[0], (plain[[0, -1]], psgd[[0, -1]])
    assert psgd[-1] <= 1.1 * plain[-1], (plain[-1], psgd[-1])


def test_horovod_fp16_compression_halves_the_bytes():
    import shardflow as sf
    import shardflow.horovod as hvd
    import shardflow.nn as snn

    was_initialized = hvd.is_initialized()
    hvd.init()
    sent, grads = {}, {}
    try:
        for name, comp in (("none", hvd.Compression.none), ("fp16", hvd.Compression.fp16)):
            sf.manual_seed(0)
            m = snn.Linear(8, 4)
            opt = hvd.DistributedOptimizer(sf.optim.SGD(m.parameters(), lr=0.1), compression=comp)
            m(sf.ones(2, 8)).pow(2).sum().backward()
            opt.synchronize()
            sent[name] = opt.comm_bytes
            grads[name] = m.weight.grad.numpy().copy()
            assert m.weight.grad.dtype == sf.float32
    finally:
        if not was_initialized:
            hvd.shutdown()
    assert sent["none"] == 4 * (8 * 4 + 4) and sent["fp16"] * 2 == sent["none"]
    np.testing.assert_array_equal(grads["fp16"], grads["none"].astype(np.float16).astype(np.float32))
