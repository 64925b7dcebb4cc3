"""DDP communication hooks on 2 real ranks: allreduce / fp16 / bf16 / PowerSGD results against
the uncompressed average and against PyTorch's hook math (computed here, in the test process,
with torch), and the bytes each hands to the comm layer (``CountingProcessGroup``).

One MPI job (``tests/distributed/programs/ddp_comm_hooks_record.py``) runs every variant
(the ranks write their local gradients, reduced gradients, byte counts and PowerSGD memories
to ``.npz`` files); the checks run in the test process.
Each parameter gets its own bucket (``bucket_cap_mb`` tiny), so a bucket's PowerSGD memories
are those of one parameter.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi

W = 2
STEPS = 4
START = 2  # PowerSGD's start_powerSGD_iter in the 'powersgd' variant

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("hooks")
    run_program("tests.distributed.programs.ddp_comm_hooks_record", n=W, timeout=120,
                args=[str(out), STEPS, START]).check()

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


def test_custom_hook_from_torch_docs_get_future_idiom(runs):
    """``dist.all_reduce(bucket.buffer().div_(W), async_op=True).get_future().then(lambda fut:
    fut.value()[0])``: torch's math (divide, then sum), bitwise. (W from
    ``dist.get_world_size(group)``: shardflow's groups have ``size`` as an int attribute, not
    torch's ``size()`` method.)"""
    recs = runs("custom")
    for step in range(STEPS):
        for n in NAMES:
            parts = [torch.from_numpy(rec[f"local/{step}/{n}"]) / W for rec in recs]
            assert np.array_equal(recs[0][f"reduced/{step}/{n}"], (parts[0] + parts[1]).numpy()), (step, n)


@pytest.mark.parametrize("variant,tdtype", [("fp16_wrap", torch.float16), ("bf16_wrap", torch.bfloat16)])
def test_compress_wrappers_average_in_the_low_dtype(runs, variant, tdtype):
    """``fp16_compress_wrapper(allreduce_hook)``: the bucket cast to the low dtype, averaged
    there (half the bytes), cast back: within the low dtype's rounding of the exact mean
    (shardflow's AVG sums then divides, torch's hook divides then sums: not bitwise)."""
    base, recs = runs("none"), runs(variant)
    eps = float(torch.finfo(tdtype).eps)
    for step in range(STEPS):
        assert 2 * int(recs[0][f"bytes/{step}"]) == int(base[0][f"bytes/{step}"])
        for n in NAMES:
            got = recs[0][f"reduced/{step}/{n}"]
            assert np.array_equal(recs[1][f"reduced/{step}/{n}"], got), "ranks disagree"
            parts = [torch.from_numpy(rec[f"local/{step}/{n}"]).to(tdtype) for rec in recs]
            ref = ((parts[0].float() + parts[1].float()) / W).to(tdtype).float().numpy()
            assert np.abs(got - ref).max() <= 2 * eps * np.abs(ref).max() + 1e-6, (variant, step, n)
            assert got.dtype == np.float32


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
