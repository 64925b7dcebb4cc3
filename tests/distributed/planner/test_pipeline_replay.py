"""The pipeline replay (``planner.pipesim``) and the pipeline terms of the cost model on a
measured host: the runtime's timeline, its wake-up delays, processor sharing of the cores,
and the gradient accumulation of micro-batches."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from shardflow.distributed.pipelining.schedules import Schedule1F1B, ScheduleGPipe
from shardflow.distributed.planner import Layout, RunSpec, estimate
from shardflow.distributed.planner.pipesim import (
    FIRST_NAP_S,
    SPIN_S,
    actions_1f1b,
    actions_gpipe,
    simulate,
    timeline,
    wake_delay,
)

from .profiles import measured
from .synthetic import LinearStack


def _schedule_timeline(cls, p, m):
    """The runtime schedule's own timeline, without a process group (only ``p``, ``m`` and
    the stage count enter it)."""
    sched = cls.__new__(cls)
    sched.p, sched.n_microbatches, sched._timeline_cache = p, m, None
    sched.stages = [SimpleNamespace(num_stages=p)]
    return sched._timeline()


@pytest.mark.parametrize("p,m", [(2, 2), (2, 4), (3, 5), (4, 4), (4, 8)])
def test_timeline_is_the_schedules(p, m):
    assert timeline([actions_1f1b(r, p, m) for r in range(p)], p) == _schedule_timeline(Schedule1F1B, p, m)
    assert timeline([actions_gpipe(r, p, m) for r in range(p)], p) == _schedule_timeline(ScheduleGPipe, p, m)


def test_wake_delay_follows_the_spin_then_nap_schedule():
    """Spin 200 us (no delay), then naps of 10, 20, 40 us ...: a message landing 15 us into
    the naps is seen at the end of the second nap (200 + 10 + 20 = 230 us): 15 us late."""
    assert wake_delay(SPIN_S / 2) == 0.0
    assert wake_delay(SPIN_S + 15e-6) == pytest.approx(15e-6)
    assert wake_delay(SPIN_S + FIRST_NAP_S) == pytest.approx(0.0, abs=1e-12)
    # a long wait: naps are capped at 1 ms, so the delay is below 1 ms
    assert 0.0 <= wake_delay(0.5) < 1e-3


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("p,m", [(2, 4), (3, 5), (4, 8)])
def test_replay_is_the_closed_formula_with_a_core_per_rank_and_no_naps(schedule, p, m):
    """Equal stages, a core per rank, messages noticed at once: (m + p - 1)(f + b)."""
    f, b = 1.0, 2.0
    assert simulate([f] * p, [b] * p, m, schedule=schedule, naps=False) == pytest.approx((m + p - 1) * (f + b))


def test_replay_on_fewer_cores_is_above_the_busy_bound():
    """4 stages on 2 cores: the old bound max((m + p - 1) T, p m T / cores) is a lower bound
    (it assumes the off-path ranks never slow the critical path); the replay is above it and
    below scaling the whole schedule by ranks / cores (ranks nap in the bubble)."""
    p, m, f, b = 4, 4, 1.0, 2.0
    T = f + b
    t = simulate([f] * p, [b] * p, m, cores=2, naps=False)
    assert max((m + p - 1) * T, p * m * T / 2) < t < (m + p - 1) * T * p / 2
    # the same pipeline with a core per rank is unchanged by the cores argument
    assert simulate([f] * p, [b] * p, m, cores=4, naps=False) == pytest.approx((m + p - 1) * T)


def test_wake_up_delays_cost_time_per_message_when_stages_are_short():
    """Stages of 1 ms: every receive that waits past the spin pays part of a nap; with
    second-long stages the same delays vanish in the step."""
    p, m = 2, 4
    short = simulate([1e-3] * p, [2e-3] * p, m)
    assert short > (m + p - 1) * 3e-3 * 1.01
    long_ = simulate([1.0] * p, [2.0] * p, m)
    assert long_ == pytest.approx((m + p - 1) * 3.0, rel=1e-3)


def _spec(trace, batch=8, entry="train"):
    return RunSpec(trace, batch, entry=entry)


def test_measured_pipeline_pays_the_replays_wake_ups_and_the_old_formula_does_not():
    """On a measured host the step of shardflow's pipeline is the replay's (entry ``train``),
    above the closed formula when stages are short; entry ``any`` keeps the formula."""
    tr = LinearStack(layers=4, C=64, rows=8)
    prof = measured(gflops=0.1, adamw_ns=0.0, cores=64)  # ~1 ms actions: waits outlast the spin
    L = Layout(pp=2, microbatches=4)
    replayed = estimate(_spec(tr, entry="train"), L, prof)
    formula = estimate(_spec(tr, entry="any"), L, prof)
    assert replayed.step_time > formula.step_time * 1.01


def test_micro_batches_accumulate_gradients_into_grad():
    """Each stage copies its parameters' first gradient into ``.grad`` and adds the other
    ``m - 1``: with everything else free, a pipeline's step grows by (m - 1) adds of the
    stage's parameter bytes over going from m = 1 to m micro-batches (GEMMs at a huge rate,
    no overheads, no communication, one memory-bound bandwidth)."""
    C, gbs = 256, 1.0
    tr = LinearStack(layers=2, C=C, rows=1)
    prof = measured(gflops=1e9, gbs=gbs, adamw_ns=0.0, cores=64)
    one = estimate(_spec(tr, batch=8, entry="any"), Layout(pp=1, microbatches=1), prof)
    stage_bytes = 2 * C * C * 4  # both layers' weights, fp32
    assert one.step_time == pytest.approx(2 * stage_bytes / (gbs * 1e9), rel=1e-6)  # the copy in
    # pp = 2, m = 4: each stage's one layer is copied in once and added 3 times, spread
    # over its 4 backwards; the closed 1F1B formula (entry "any") then takes (m + p - 1) of them
    p, m, nb = 2, 4, C * C * 4
    pipe = estimate(_spec(tr, batch=8, entry="any"), Layout(pp=p, microbatches=m), prof)
    per_mb = (2 * nb + (m - 1) * 3 * nb) / (gbs * 1e9) / m
    assert pipe.step_time == pytest.approx((m + p - 1) * per_mb, rel=1e-6)


def test_breakdown_of_a_replayed_pipeline_adds_up_on_shared_cores():
    """The report's terms (compute + bubble + exposed communication + optimizer + the cores'
    time-sharing) still sum to the step when the step is the replay's."""
    from shardflow.distributed.planner.report import breakdown

    tr = LinearStack(layers=4)
    prof = measured(cores=2, overhead_us=10.0, alpha=20e-6, beta_per_gb=1.0, adamw_ns=2.0)
    e = estimate(_spec(tr, batch=8, entry="train"), Layout(pp=4, microbatches=4), prof)
    assert e.time_shared > 0
    parts = e.compute + e.bubble_time + e.comm_exposed + e.optimizer + e.time_shared
    assert parts == pytest.approx(e.step_time)
    assert "cores time-shared" in breakdown(e)
