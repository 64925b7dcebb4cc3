"""The planner's cost terms on cases computed by hand: a Linear's FLOPs (and PyTorch's count
of them), collective formulas and bytes, ZeRO's memory per stage (the ZeRO paper's), the
pipeline bubble, tensor-parallel splits and their collectives."""

import copy
import math

import pytest

from shardflow.distributed.planner import Layout, RunSpec, estimate
from shardflow.distributed.planner.collectives import (
    bus_bytes,
    fit_alpha_beta,
    formula_time,
    ring_time,
    tree_allreduce_time,
)
from shardflow.distributed.planner.cost import predicted_comm_plan
from shardflow.distributed.planner.opcost import op_cost
from shardflow.distributed.planner.trace import OpRecord

from .profiles import measured
from .synthetic import LinearStack


def _linear(M, K, N, bias=True, x_grad=True):
    ins = [(M, K), (N, K)] + ([(N,)] if bias else [])
    return OpRecord(name="linear", in_shapes=ins, out_shapes=[(M, N)], itemsize=4, module="", layer=None,
                    params={}, needs_grad=True, inputs_grad=[x_grad, True] + ([True] if bias else []),
                    batch_dep=True, dp_reduce=[])


def test_linear_flops_by_hand_and_as_pytorch_counts_them():
    c = op_cost(_linear(6, 5, 7))
    assert c.family == "gemm"
    assert c.flops == 2 * 6 * 5 * 7
    assert c.fwd_gemms == [(6, 5, 7, 1)]
    assert sorted(c.bwd_gemms) == sorted([(6, 7, 5, 1), (7, 6, 5, 1)])  # dX, dW
    assert c.bwd_flops == 2 * c.flops
    assert op_cost(_linear(6, 5, 7, x_grad=False)).bwd_flops == c.flops  # dW only

    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    lin = torch.nn.Linear(5, 7)
    x = torch.randn(6, 5, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        y = lin(x)
    fwd = fc.get_total_flops()
    with FlopCounterMode(display=False) as fc:
        y.sum().backward()
    assert (fwd, fc.get_total_flops()) == (c.flops, c.bwd_flops)


def test_attention_flops_match_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    B, H, T, E = 2, 3, 16, 8
    rec = OpRecord(name="scaled_dot_product_attention", in_shapes=[(B, H, T, E)] * 3, out_shapes=[(B, H, T, E)],
                   itemsize=4, module="", layer=None, params={}, needs_grad=True, inputs_grad=[True] * 3,
                   batch_dep=True, dp_reduce=[])
    c = op_cost(rec)
    q, k, v = (torch.randn(B, H, T, E, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as fc:  # the math form (PyTorch's CPU kernel is not counted)
        out = torch.softmax(q @ k.transpose(-2, -1) / E**0.5, -1) @ v
    assert fc.get_total_flops() == c.flops == 4 * B * H * T * T * E
    with FlopCounterMode(display=False) as fc:
        out.sum().backward()
    assert fc.get_total_flops() == c.bwd_flops


def test_ring_all_reduce_bytes_and_time():
    S, n, a, bw = 1000.0, 4, 1e-5, 1e9
    assert bus_bytes("all_reduce", n, S) == 2 * 3 / 4 * S == 1500
    assert bus_bytes("reduce_scatter", n, S) == bus_bytes("all_gather", n, S) == 750
    assert ring_time("all_reduce", n, S, a, bw) == pytest.approx(2 * 3 * a + 1500 / bw)
    assert ring_time("all_gather", n, S, a, bw) == pytest.approx(3 * a + 750 / bw)
    assert ring_time("send_recv", 2, S, a, bw) == pytest.approx(a + S / bw)
    assert ring_time("all_reduce", 1, S, a, bw) == 0.0
    # NCCL's choice: the tree wins for small messages on many ranks, the ring for large ones
    n = 64
    small, large = 1e3, 1e9
    assert tree_allreduce_time(n, small, a, bw) < ring_time("all_reduce", n, small, a, bw)
    assert formula_time("all_reduce", n, small, a, bw) == tree_allreduce_time(n, small, a, bw)
    assert formula_time("all_reduce", n, large, a, bw) == ring_time("all_reduce", n, large, a, bw)


def test_alpha_beta_fit_recovers_the_line():
    sizes = [1e3, 1e4, 1e5, 1e6, 1e7]
    a, b = fit_alpha_beta(sizes, [3e-5 + 2e-10 * s for s in sizes])
    assert a == pytest.approx(3e-5, rel=1e-6) and b == pytest.approx(2e-10, rel=1e-6)


def _spec(trace, batch=8, **kw):
    return RunSpec(trace, batch, entry=kw.pop("entry", "any"), **kw)


@pytest.mark.parametrize("precision", ["fp32", "mixed"])
def test_zero_stage_memory_is_the_zero_papers(precision):
    """Model states per rank (parameters + gradients + optimizer state) for Adam, N = 4:
    fp32 (4 + 4 + 8 bytes per parameter): 16P, 8P + 8P/N, 4P + 12P/N, 16P/N;
    mixed precision (the ZeRO paper's 2 + 2 + 12): 16P, 4P + 12P/N, 2P + 14P/N, 16P/N."""
    tr = LinearStack(layers=2, C=64)
    P, N = tr.n_params(), 4
    want = {"fp32": [16 * P, 8 * P + 8 * P / N, 4 * P + 12 * P / N, 16 * P / N],
            "mixed": [16 * P, 4 * P + 12 * P / N, 2 * P + 14 * P / N, 16 * P / N]}[precision]
    prof = measured()
    isz = 2 if precision == "mixed" else 4
    for z in range(4):
        L = Layout(dp=N, zero=z, grad_sync="bucketed" if z < 2 else "sharded")
        e = estimate(_spec(tr, batch=8, precision=precision), L, prof)
        mp = e.memory_parts
        if z == 2:
            # fully_shard's ZeRO-2 keeps the parameters sharded at rest, as ZeRO-3; the
            # paper's replicated parameters are the gathered units it keeps from forward to
            # backward: a buffer of the whole model
            assert mp["params"] + mp["grads"] + mp["optimizer"] == pytest.approx(want[3])
            assert mp["buffers"] >= isz * P
            continue
        assert mp["params"] + mp["grads"] + mp["optimizer"] == pytest.approx(want[z]), z


def test_pipeline_bubble_formula_and_time():
    """Equal stages of time T: the step is (m + p - 1) T, the bubble (p - 1)/(m + p - 1)
    (GPipe / 1F1B) and (p - 1)/(v m + p - 1) interleaved."""
    p, m, C, rows, batch = 4, 8, 64, 8, 16
    tr = LinearStack(layers=8, C=C, rows=rows)
    prof = measured(gflops=100.0, adamw_ns=0.0)
    e = estimate(_spec(tr, batch=batch), Layout(pp=p, microbatches=m), prof)
    M = batch // m * rows
    T = 2 * (2 * M * C * C + 4 * M * C * C) / 100e9  # two layers per stage, fwd + bwd
    # + the stage's gradients written into .grad: one copy and m - 1 adds of its two layers'
    # weights over the m backwards, at the profile's 10 GB/s
    nb = 2 * C * C * 4
    T += (2 * nb + (m - 1) * 3 * nb) / 10e9 / m
    assert e.bubble == pytest.approx((p - 1) / (m + p - 1))
    assert e.compute == pytest.approx(m * T)
    assert e.bubble_time == pytest.approx((p - 1) * T)
    assert e.step_time == pytest.approx((m + p - 1) * T)
    v = 2
    e2 = estimate(_spec(tr, batch=batch), Layout(pp=p, microbatches=m, schedule="interleaved", virtual=v), prof)
    assert e2.bubble == pytest.approx((p - 1) / (v * m + p - 1))
    assert e2.step_time == pytest.approx(m * T + (p - 1) * T / v)


def test_tensor_parallel_split_and_its_collectives():
    """Megatron's pair on tp = 2: each rank computes half of each GEMM; one all-reduce of
    the row-parallel output in forward, one of the column-parallel input's gradient in
    backward, both (M, C) float32."""
    tr = LinearStack(layers=1, C=64, rows=8, pair=True)
    batch, C, M = 4, 64, 32
    prof = measured(gflops=100.0, adamw_ns=0.0, alpha=1e-6, beta_per_gb=1.0)
    spec = _spec(tr, batch=batch, tp_plan=LinearStack.tp_plan())
    one = estimate(spec, Layout(), prof)
    two = estimate(spec, Layout(tp=2), prof)
    assert two.compute == pytest.approx(one.compute / 2)
    plan = predicted_comm_plan(spec, Layout(tp=2))
    assert sorted(plan) == [("backward", "all_reduce", M * C * 4, 2), ("forward", "all_reduce", M * C * 4, 2)]
    t_ar = 1e-6 + M * C * 4 * 1e-9
    assert two.comm_exposed == pytest.approx(2 * t_ar)
    # each rank holds half of both weights
    assert two.memory_parts["params"] == pytest.approx(one.memory_parts["params"] / 2)


def test_ddp_buckets_hide_behind_backward_up_to_the_overlap():
    """DDP: the Reducer's buckets (closed at parameter boundaries: the first at 1 MB, then
    25 MB) all-reduced during backward, each in 1 MB pieces (one call each); all but the
    last bucket hide behind backward compute up to the profile's overlap fraction. Two 4 MB
    weights: buckets of 4 MB and 4 MB (the first parameter alone passes the first cap),
    4 pieces each (the backward, 10 ms, can hide the first bucket's 4.6 ms)."""
    tr = LinearStack(layers=2, C=1024, rows=32)
    alpha, beta = 1e-4, 1e-9
    for ov in (0.0, 1.0):
        prof = measured(gflops=100.0, adamw_ns=0.0, alpha=alpha, beta_per_gb=1.0, overlap=ov, gbs=1e9)
        e = estimate(_spec(tr, batch=8), Layout(dp=2, grad_sync="bucketed"), prof)
        t_bucket = 4 * (alpha + beta * (1 << 20))
        assert [c.count for c in e.collectives] == [8]
        assert e.comm_exposed == pytest.approx(t_bucket + (t_bucket if ov == 0 else 0.0))


def test_reducer_pieces_by_hand():
    """``Bucket.set_pieces``' rule, piece of 8 elements: parameters of at least 2 elements
    get pieces of their own (20 -> 8, 8, 4), smaller ones are packed (1, 1 -> one piece of
    2); the packed piece closes before a large parameter and when the next one would pass
    the cap."""
    from shardflow.distributed.planner.cost import reducer_pieces

    assert reducer_pieces([1, 1, 20, 1], 8) == [2, 8, 8, 4, 1]
    assert reducer_pieces([1] * 10, 32) == [10]
    assert reducer_pieces([1] * 10, 8) == [8, 2]  # packed up to the cap
    assert reducer_pieces([4, 4, 4], 16) == [4, 4, 4]  # each a quarter piece: direct
    assert reducer_pieces([], 8) == [0]


def test_measured_gemm_table_is_interpolated_in_log_space():
    from shardflow.distributed.planner.profile import SCHEMA, Profile

    grid = [16, 256]
    table = [[[1.0, 2.0], [4.0, 8.0]], [[16.0, 32.0], [64.0, 128.0]]]  # gflops[m][k][n] = 2^(4i+2j+k)
    comp = {"gemm": {"grid": grid, "gflops": table}}
    prof = Profile({"schema": SCHEMA, "kind": "measured", "name": "t", "compute": {"1": comp}})
    assert prof._gemm_rate(256, 16, 256, 1, "fp32") == pytest.approx(32e9)
    mid = prof._gemm_rate(64, 16, 16, 1, "fp32")  # half-way in log(M): the geometric mean
    assert mid == pytest.approx(math.sqrt(1.0 * 16.0) * 1e9)
    assert prof._gemm_rate(4096, 4096, 4096, 1, "fp32") == pytest.approx(128e9)  # clamped


def _with_conc_rate(prof, conc, gflops):
    """``prof`` with the GEMM rate measured at ``conc`` concurrent ranks set to ``gflops``."""

    data = copy.deepcopy(prof.data)
    data["compute"][str(conc)] = copy.deepcopy(data["compute"][str(conc)])  # shared with the others
    g = data["compute"][str(conc)]["gemm"]
    g["gflops"] = [[[gflops] * len(g["grid"])] * len(g["grid"])] * len(g["grid"])
    return type(prof)(data)


def test_rates_beyond_the_cores_are_those_measured_at_the_cores():
    """4 ranks on 2 cores run, while they hold a core, at the rate of 2 busy ranks: the
    4-rank calibration's short ops mostly ran un-preempted (not a time-shared rate)."""
    prof = _with_conc_rate(measured(concs=(1, 2, 4), cores=2), 4, 400.0)
    g = [(64, 64, 64, 1)]
    assert prof.gemm_time(g, conc=4) == pytest.approx(prof.gemm_time(g, conc=2))
    assert prof.gemm_time(g, conc=2) == pytest.approx(2 * 64**3 / 100e9)
    wide = _with_conc_rate(measured(concs=(1, 2, 4), cores=8), 4, 400.0)  # 4 ranks fit 8 cores
    assert wide.gemm_time(g, conc=4) == pytest.approx(2 * 64**3 / 400e9)


def test_time_share_is_busy_ranks_over_cores():
    prof = measured(cores=2)
    assert (prof.time_share(1), prof.time_share(2), prof.time_share(4), prof.time_share(6)) == (1.0, 1.0, 2.0, 3.0)
    from shardflow.distributed.planner.profile import load_profile

    assert load_profile("a100-selene").time_share(64) == 1.0  # simulated: one device per rank


def test_data_parallel_beyond_the_cores_time_shares_the_whole_step():
    """dp=4 on 2 cores: every rank is busy the whole step (compute, spinning collectives,
    the optimizer), so the step is twice the schedule of a rank that had a core to itself."""
    tr = LinearStack(layers=2)
    spec = _spec(tr, batch=8)
    kw = dict(overhead_us=10.0, alpha=20e-6, beta_per_gb=1.0, adamw_ns=2.0)
    L = Layout(dp=4, grad_sync="bucketed")
    alone = estimate(spec, L, measured(cores=64, **kw))
    shared = estimate(spec, L, measured(cores=2, **kw))
    assert alone.time_share == 1.0
    assert shared.step_time == pytest.approx(2 * alone.step_time)
    assert shared.time_share == pytest.approx(2.0)
    two = estimate(spec, Layout(dp=2, grad_sync="bucketed"), measured(cores=2, **kw))
    assert two.time_share == 1.0  # within the cores: unchanged


def test_pipeline_bubble_is_not_time_shared():
    """pp=4, m=4 on 2 cores, equal stages T: the schedule takes (m + p - 1) T = 7T, but the
    ranks are busy only m T each (they nap in the bubble): 4 ranks x 4T over 2 cores = 8T.
    The step is max(7T, 8T) = 8T, not the 14T of scaling the whole schedule by 4/2."""
    p, m = 4, 4
    tr = LinearStack(layers=4)
    spec = _spec(tr, batch=8)
    L = Layout(pp=p, microbatches=m)
    alone = estimate(spec, L, measured(cores=64, adamw_ns=0.0))
    shared = estimate(spec, L, measured(cores=2, adamw_ns=0.0))
    T = max(alone.stage_times)
    assert alone.step_time == pytest.approx((m + p - 1) * T)
    assert shared.step_time == pytest.approx(p * m * T / 2)
    assert shared.time_share == pytest.approx(8 / 7)


def _activation_heavy(layers=2, C=64):
    """A stack whose activations (1 MB per layer per sample) dwarf its parameters."""
    return LinearStack(layers=layers, C=C, retained=float(1 << 20))


def test_zero1_gather_bucket_does_not_meet_the_activations():
    """ZeRO-1's all-gather of the updated rows runs after the step, when the activations are
    gone: with activations far above everything else, ZeRO-1's peak is DDP's less the
    optimizer state it shards (the lead's bench: dp4 small measured 23.0 vs 18.3 MiB)."""
    tr = _activation_heavy()
    prof, N = measured(), 4
    ddp = estimate(_spec(tr, batch=8), Layout(dp=N, grad_sync="bucketed"), prof)
    z1 = estimate(_spec(tr, batch=8), Layout(dp=N, zero=1, grad_sync="bucketed"), prof)
    saved = ddp.memory_parts["optimizer"] - z1.memory_parts["optimizer"]
    assert saved == pytest.approx(8 * tr.n_params() * (1 - 1 / N))
    assert z1.memory == pytest.approx(ddp.memory - saved)


def test_fully_shard_packed_gradients_do_not_meet_the_activations():
    """ZeRO-3 at the start of backward holds its shards, the activations and two gathered
    units (in use, prefetched); the two units' packed gradients come only as backward frees
    activations. Peak = P/N + O/N + A + 2 units (the old sum added the packed two as well)."""
    tr = _activation_heavy()
    N = 4
    e = estimate(_spec(tr, batch=8), Layout(dp=N, zero=3, grad_sync="sharded"), measured())
    mp = e.memory_parts
    unit = 4 * tr.C * tr.C  # one layer's weight, the largest fully_shard unit
    assert mp["activations"] > 10 * (mp["params"] + mp["optimizer"])
    assert e.memory == pytest.approx(mp["params"] + mp["optimizer"] + mp["activations"] + 2 * unit)


def test_1f1b_gradients_are_resident_in_the_steady_state():
    """1F1B on stage 0 of 2 runs F0 F1 B0 F2 B1 F3 B2 B3: with m = 4 the forwards F2 and F3
    run after backwards, so the gradients accumulated so far meet two micro-batches'
    activations; with m = 2 (F0 F1 B0 B1) and under GPipe (every forward first) they do not.
    (Measured, small GPT pp2: m = 4 18.3 MiB, predicted 16.3 without the gradients, 17.9
    with them.) Each peak: P + O + 2 micro-batches' activations (+ G)."""
    tr = _activation_heavy()
    prof = measured()

    def parts(m, schedule="1f1b"):
        e = estimate(_spec(tr, batch=8, entry="train"),
                     Layout(pp=2, microbatches=m, schedule=schedule), prof)
        return e.memory, e.memory_parts

    (m2, p2), (m4, p4), (g4, pg) = parts(2), parts(4), parts(4, "gpipe")
    assert p4["activations"] == pytest.approx(p2["activations"] / 2)  # 2 in flight, half the rows
    assert m2 == pytest.approx(p2["params"] + p2["optimizer"] + p2["activations"])
    assert m4 == pytest.approx(p4["params"] + p4["optimizer"] + p4["activations"] + p4["grads"])
    assert g4 == pytest.approx(pg["params"] + pg["optimizer"] + pg["activations"])  # 4 in flight


def test_pipeline_data_parallel_reducer_buckets_count():
    """shardflow's pipelines reduce a stage's gradients over dp after the schedule with a
    ``Reducer`` whose flat buckets (the stage's gradient bytes) are made at the first step
    and kept (measured, small GPT dp2 pp2 m4: 14.9 MiB, predicted 13.3 without them); a
    simulated cluster's pipeline (entry "any", Megatron's) has no such copy."""
    tr = _activation_heavy()
    prof = measured()
    L1, L2 = Layout(pp=2, microbatches=4), Layout(dp=2, pp=2, microbatches=4)
    one = estimate(_spec(tr, batch=16, entry="train"), L1, prof)
    two = estimate(_spec(tr, batch=16, entry="train"), L2, prof)
    assert two.memory_parts["buffers"] == pytest.approx(two.memory_parts["grads"])
    # dp2 halves the rows per micro-batch; parameters, gradients and state stay the stage's
    assert two.memory == pytest.approx(one.memory - one.memory_parts["activations"] / 2
                                       + two.memory_parts["grads"])
    sim = estimate(_spec(tr, batch=16, entry="any"), L2, prof)
    assert sim.memory_parts["buffers"] == 0.0


def test_tensor_parallel_partial_residual_is_two_row_outputs_on_shardflows_runtime():
    """shardflow's tp keeps a row-parallel output partial until the next LayerNorm
    all-reduces it: inside a block the partial residual and the row output sit beside the
    ops' kept tensors, two (M, C) activations more at the forward's peak (measured, small GPT
    tp2: the peak inside a block 1.0 MiB above its end, 2 x (16 x 64 x 128) x 4 bytes);
    Megatron (entry "any") all-reduces the row output at once: no such term."""
    tr = LinearStack(layers=2, C=64, rows=8, pair=True, retained=float(1 << 18))  # activations dominate
    batch, C = 4, 64
    M = batch * 8
    prof = measured()
    mem = {entry: estimate(_spec(tr, batch=batch, tp_plan=LinearStack.tp_plan(), entry=entry),
                           Layout(tp=2), prof).memory for entry in ("train", "any")}
    assert mem["train"] - mem["any"] == pytest.approx(2 * M * C * 4)


def test_breakdown_terms_add_up_to_the_step_when_cores_are_time_shared():
    """The report's terms (compute + bubble + exposed communication + optimizer + the cores'
    time-sharing) sum to the predicted step, and the report names the time-sharing."""
    from shardflow.distributed.planner.report import breakdown

    tr = LinearStack(layers=4)
    prof = measured(cores=2, overhead_us=10.0, alpha=20e-6, beta_per_gb=1.0, adamw_ns=2.0)
    prof.data["host"] = {"sched_tick_s": 0.004}  # the descheduled-peer wait counts as communication
    for L in (Layout(dp=4, grad_sync="bucketed"), Layout(pp=4, microbatches=4)):
        e = estimate(_spec(tr, batch=8), L, prof)
        assert e.time_shared > 0
        assert e.sync_wait == (pytest.approx(0.004) if L.pp == 1 else 0.0)
        parts = e.compute + e.bubble_time + e.comm_exposed + e.optimizer + e.time_shared
        assert parts == pytest.approx(e.step_time)
        assert "cores time-shared" in breakdown(e)


def _with_sync_wait(prof, ranks, work_s, extra_s):
    data = copy.deepcopy(prof.data)
    data["sync_wait"] = {str(ranks): {"work_s": list(work_s), "extra_s": list(extra_s)}}
    return type(prof)(data)


def test_sync_wait_is_zero_within_the_cores_and_interpolated_in_log_work_beyond():
    prof = _with_sync_wait(measured(cores=2), 4, [1e-3, 1e-1], [1e-3, 3e-3])
    assert prof.sync_wait(2, 1e-2) == 0.0  # a core per rank: the ranks arrive together
    assert prof.sync_wait(4, 1e-4) == pytest.approx(1e-3)  # clamped at the ends
    assert prof.sync_wait(4, 1.0) == pytest.approx(3e-3)
    assert prof.sync_wait(4, 1e-2) == pytest.approx(2e-3)  # halfway in log(work)
    assert measured(cores=2).sync_wait(4, 1e-2) == 0.0  # a profile from before the field
    wide = _with_sync_wait(measured(cores=8), 4, [1e-3, 1e-1], [1e-3, 3e-3])
    assert wide.sync_wait(4, 1e-2) == 0.0


def test_collectives_beyond_the_cores_each_wait_for_descheduled_peers():
    """tp=4 on 2 cores: every all-reduce after compute (one per row output in forward, one
    per column input's gradient in backward) adds the measured wait; within the cores, or
    with no measurement, nothing is added."""
    tr = LinearStack(layers=2, C=64, rows=8, pair=True)
    spec = _spec(tr, batch=4, tp_plan=LinearStack.tp_plan())
    wait = 2e-3
    kw = dict(gflops=100.0, adamw_ns=0.0, alpha=1e-6, beta_per_gb=1.0)
    L = Layout(tp=4)
    plain = estimate(spec, L, measured(cores=2, **kw))
    waits = estimate(spec, L, _with_sync_wait(measured(cores=2, **kw), 4, [1e-6, 1.0], [wait, wait]))
    calls = sum(c.count for c in waits.collectives if c.kind != "send_recv")
    assert calls == 4  # 2 layers x (forward + backward)
    assert waits.sync_wait == pytest.approx(calls * wait)
    assert waits.step_time == pytest.approx(plain.step_time + calls * wait)
    wide = estimate(spec, L, _with_sync_wait(measured(cores=8, **kw), 4, [1e-6, 1.0], [wait, wait]))
    assert wide.sync_wait == 0.0


def test_back_to_back_collectives_wait_once():
    """DDP's buckets are waited for together at the end of backward: the ranks meet once,
    however many buckets there are."""
    tr = LinearStack(layers=2, C=1024, rows=8)  # two buckets
    wait = 2e-3
    prof = _with_sync_wait(measured(cores=2, gflops=100.0, adamw_ns=0.0, alpha=1e-4, beta_per_gb=1.0),
                           4, [1e-6, 1.0], [wait, wait])
    e = estimate(_spec(tr, batch=8), Layout(dp=4, grad_sync="bucketed"), prof)
    assert [c.count for c in e.collectives] == [8]  # 2 buckets of 4 x 1 MB pieces
    assert e.sync_wait == pytest.approx(wait)


def test_sync_wait_without_a_measurement_is_one_scheduler_tick():
    """A profile with the host's tick and no measured wait: one tick per synchronisation
    beyond the cores (the first arrivals spin to a tick, then the last ones to the next)."""
    prof = measured(cores=2)
    prof.data["host"] = {"sched_tick_s": 0.004}
    assert prof.sync_wait(4, 1e-3) == pytest.approx(0.004)
    assert prof.sync_wait(2, 1e-3) == 0.0
    measured_too = _with_sync_wait(prof, 4, [1e-3, 1e-1], [1e-3, 1e-3])
    assert measured_too.sync_wait(4, 1e-2) == pytest.approx(1e-3)  # the measurement wins
    within = _with_sync_wait(prof, 2, [1e-3, 1e-1], [0.0, 0.0])  # measured with a core per rank only
    assert within.sync_wait(4, 1e-2) == pytest.approx(0.004)  # says nothing about 4 ranks


def test_calibrate_reads_the_kernel_tick():
    from shardflow.distributed.planner.calibrate import sched_tick_s

    t = sched_tick_s()
    assert t is None or 1e-4 <= t <= 0.02  # CONFIG_HZ is 100..1000 (or 10000)


def _with_root_and_tiny(tr):
    """``tr``'s trace plus a root parameter (an embedding-like (C, C) weight, no layer) and a
    2-row parameter in layer 0 (fewer rows than ranks: fully_shard replicates it)."""
    from shardflow.distributed.planner.trace import ParamRecord

    class Traced:
        def at(self, batch=1, **dims):
            st = tr.at(batch, **dims)
            st.params = [ParamRecord("emb.weight", (tr.C, tr.C), None, "emb")] + st.params \
                + [ParamRecord("h.0.tiny", (2,), 0, "h.0")]
            return st

    return Traced()


def test_fully_shard_collectives_are_one_per_parameter_met_once_per_unit():
    """fully_shard (FSDPParamGroup) issues one all-gather and one reduce-scatter per split
    parameter (rows >= ranks) and one all-reduce of a unit's replicated ones; ZeRO-3 gathers
    every unit but the root again in backward. Units here: root [emb], block 0 [fc, tiny],
    block 1 [fc] on 4 ranks: forward 3 all-gathers, backward 2 all-gathers and 3
    reduce-scatters + 1 all-reduce; with no overlap all of it is exposed, 9 alphas, and the
    ranks meet once per unit and phase (3 + 2 + 3 times)."""
    tr = _with_root_and_tiny(LinearStack(layers=2, C=64, rows=8))
    a, wait = 1e-4, 2e-3
    spec = _spec(tr, batch=8)
    L = Layout(dp=4, zero=3, grad_sync="sharded")
    free = estimate(spec, L, measured(alpha=0.0))
    e = estimate(spec, L, measured(alpha=a))
    got = [(c.phase, c.kind, c.count, c.syncs) for c in e.collectives]
    assert got == [("forward", "all_gather", 3, 3), ("backward", "all_gather", 2, 2),
                   ("backward", "reduce_scatter", 4, 3)]
    assert e.step_time - free.step_time == pytest.approx(9 * a)
    shared = _with_sync_wait(measured(cores=2, alpha=a), 4, [1e-6, 1.0], [wait, wait])
    assert estimate(spec, L, shared).sync_wait == pytest.approx(8 * wait)
    z2 = estimate(spec, Layout(dp=4, zero=2, grad_sync="sharded"), measured(alpha=a))
    assert [c.count for c in z2.collectives] == [3, 4]  # no backward gathers


def test_fully_shard_counts_match_the_runtime_on_gpt():
    """The GPT's fully_shard units (each block, then the root) issue, per step, one
    all-gather per parameter in forward, again for every block's in backward (ZeRO-3), and
    one reduce-scatter per parameter: measured with ``comm_plan()`` on the bench's small
    GPT, dp2: 52 / 48 / 52 (4 blocks of 12 parameters, 4 at the root)."""
    from shardflow.distributed.planner.auto import lm_spec
    from shardflow.models.gpt import GPT, GPTConfig

    m = GPT(GPTConfig(block_size=8, vocab_size=32, n_layer=2, n_head=2, n_embd=16))
    spec = lm_spec(m, 4, entry="train")
    e = estimate(spec, Layout(dp=2, zero=3, grad_sync="sharded"), measured())
    assert [(c.phase, c.kind, c.count) for c in e.collectives] == [
        ("forward", "all_gather", 28), ("backward", "all_gather", 24), ("backward", "reduce_scatter", 28)]


def _with_batched(prof, world, alpha):
    data = copy.deepcopy(prof.data)
    data["collectives_batched"] = {str(world): {k: {str(world): alpha}
                                                for k in ("all_gather", "reduce_scatter", "all_reduce")}}
    return type(prof)(data)


def test_batched_collectives_take_their_measured_alpha():
    """A call issued in a batch of non-blocking ones costs the profile's batched alpha (with
    the blocking fit's beta) for the job and group size measured; other sizes, blocking
    calls and profiles without the field keep the blocking fit."""
    from shardflow.distributed.planner.profile import Group

    a, ab, beta_gb = 1e-4, 1e-3, 2.0
    prof = _with_batched(measured(alpha=a, beta_per_gb=beta_gb), 4, ab)
    g4, g2 = Group(size=4, world=4), Group(size=2, world=4)
    nb = 1e6
    assert prof.collective_time("all_gather", nb, g4, batched=True) == pytest.approx(ab + beta_gb * 1e-9 * nb)
    assert prof.collective_time("all_gather", nb, g4) == pytest.approx(a + beta_gb * 1e-9 * nb)
    assert prof.collective_time("all_gather", nb, g2, batched=True) == pytest.approx(a + beta_gb * 1e-9 * nb)
    assert measured(alpha=a).collective_time("all_gather", nb, g4, batched=True) == pytest.approx(a)


def test_fully_shard_calls_and_reducer_pieces_are_costed_as_a_batch():
    """fully_shard's 9 per-parameter calls (root, block 0, block 1 on 4 ranks; the case
    above) each cost the batched alpha: 9 x (batched - blocking) more; so does the
    Reducer's one piece (48 KB of gradients: one bucket, one packed piece) under DDP."""
    tr = _with_root_and_tiny(LinearStack(layers=2, C=64, rows=8))
    a, ab = 1e-4, 1e-3
    spec = _spec(tr, batch=8)
    plain, batched = measured(alpha=a), _with_batched(measured(alpha=a), 4, ab)
    L = Layout(dp=4, zero=3, grad_sync="sharded")
    assert estimate(spec, L, batched).step_time - estimate(spec, L, plain).step_time == pytest.approx(9 * (ab - a))
    ddp = Layout(dp=4, grad_sync="bucketed")
    assert estimate(spec, ddp, batched).step_time - estimate(spec, ddp, plain).step_time == pytest.approx(ab - a)


def test_global_data_parallel_lists_its_blocking_loss_all_reduces():
    """parallelize's data parallelism on global tensors runs, besides the reducer's pieces
    and the per-use all-reduces, two blocking one-element all-reduces per step: the loss's
    mean in forward (per micro-batch) and the loss read after the step (``.item()``); both
    are listed (each a point where the ranks meet) and cost alpha each. Entry ``any``
    (Megatron's loop) reads no loss; a pipeline reads it over the whole world."""
    tr = LinearStack(layers=2, C=64, rows=8)
    a = 1e-4
    L = Layout(dp=4, grad_sync="global-bucketed")
    e = estimate(_spec(tr, batch=8, entry="parallelize"), L, measured(alpha=a))
    loss = [(c.phase, c.count, c.seconds) for c in e.collectives if c.nbytes == 8]
    assert loss == [("forward", 1, pytest.approx(a)), ("step", 1, pytest.approx(a))]
    other = estimate(_spec(tr, batch=8, entry="any"), L, measured(alpha=a))
    assert [c.phase for c in other.collectives if c.nbytes == 8] == ["forward"]
    # a pipeline's step all-reduces the last stage's losses over the whole world
    pipe = estimate(_spec(tr, batch=8, entry="train"), Layout(pp=2, microbatches=2), measured(alpha=a))
    assert [(c.phase, c.axis, c.group) for c in pipe.collectives if c.nbytes == 8] == [("step", "world", 2)]
