"""Pipeline parallelism on real ranks against one process (docs/PIPELINE.md).

Every rank builds the same GPT-mini (4 layers) and computes the single-process reference
itself (full batch forward + backward, then SGD steps); the pipelined run must give the
same mean micro-batch loss and the same gradient for every parameter of its stages (1e-5),
for GPipe, 1F1B and interleaved 1F1B on 2 ranks, 4 stages on 4 ranks, and 2 stages x 2
data-parallel replicas. The memory check compares the activation bytes a stage holds under
GPipe and 1F1B (and the tracemalloc peak of the step) on the same run.
"""

import numpy as np
import pytest

from shardflow.testing.mpi import run_program

ENV = {"SHARDFLOW_COMM_TIMEOUT": "30"}

@pytest.mark.mpi
def test_pipeline_two_stages_equals_one_process_and_1f1b_holds_less():
    run_program("tests.distributed.programs.pipeline_two_stages", n=2, timeout=120, env=ENV).check()


@pytest.mark.mpi
def test_pipeline_four_stages_and_pp_times_dp_equal_one_process():
    run_program("tests.distributed.programs.pipeline_four_ranks", n=4, timeout=120, env=ENV).check()


# ---------------------------------------------------------------- single process
def _simulate(p, v, m, make):
    """Run every rank's action list with blocking receives (a rank waits for the data it
    needs): the schedules must finish (no deadlock) and run each F/B exactly once."""
    acts = [list(make(r)) for r in range(p)]
    done = set()
    pos = [0] * p
    S = p * v
    while any(pos[r] < len(acts[r]) for r in range(p)):
        moved = False
        for r in range(p):
            if pos[r] == len(acts[r]):
                continue
            kind, s, mb = acts[r][pos[r]]
            need = (("F", s - 1, mb) if s > 0 else None) if kind == "F" else \
                   (("B", s + 1, mb) if s < S - 1 else ("F", s, mb))
            if need is None or need in done:
                done.add((kind, s, mb))
                pos[r] += 1
                moved = True
        assert moved, f"deadlock at positions {pos}"
    assert len(done) == 2 * S * m


@pytest.mark.parametrize("p,v,m", [(2, 1, 1), (2, 1, 4), (4, 1, 3), (4, 1, 8), (2, 2, 4), (4, 2, 8), (3, 3, 6)])
def test_schedules_cover_every_microbatch_without_deadlock(p, v, m):
    from shardflow.distributed.pipelining import schedules

    class G:
        size = p

        def __init__(self, rank):
            self.rank = rank

    def actions(cls, r):
        sched = object.__new__(cls)
        sched.n_microbatches, sched.p, sched.v, sched.group = m, p, v, G(r)
        sched.stage = type("S", (), {"stage_index": r})()
        return sched._actions()

    if v == 1:
        for cls in (schedules.ScheduleGPipe, schedules.Schedule1F1B):
            _simulate(p, 1, m, lambda r, cls=cls: actions(cls, r))
        # 1F1B: rank r holds at most p - r micro-batches
        for r in range(p):
            live, peak = 0, 0
            for kind, _, _ in actions(schedules.Schedule1F1B, r):
                live += 1 if kind == "F" else -1
                peak = max(peak, live)
            assert peak == min(p - r, m)
    else:
        for cls in (schedules.ScheduleInterleaved1F1B, schedules.ScheduleLoopedBFS):
            _simulate(p, v, m, lambda r, cls=cls: actions(cls, r))


def test_one_stage_pipeline_in_one_process_equals_plain_backward():
    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.nn.functional as F
    from shardflow.distributed.pipelining import (
        PipelineStage,
        ScheduleGPipe,
        pipe_split,
        split_module,
    )

    sf.manual_seed(0)
    seq = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), pipe_split(), nn.Linear(8, 3))
    pipe = split_module(seq)
    assert pipe.num_stages == 2 and [len(s) for s in pipe.stages] == [2, 1]
    whole = nn.Sequential(*[c for c in seq.children()])
    x = sf.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))
    y = sf.tensor(np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32))
    F.mse_loss(whole(x), y).backward()
    ref = [p.grad.numpy().copy() for p in whole.parameters()]
    whole.zero_grad()
    from shardflow.comm import world

    was_initialized = world.is_initialized()
    try:
        stage = PipelineStage(whole, 0, 1)  # no group: the world of one (initialised here)
        losses = []
        out = ScheduleGPipe(stage, 3, loss_fn=F.mse_loss).step(x, target=y, losses=losses)
    finally:
        if not was_initialized:  # leave no default group behind for later tests in this process
            world.destroy()
    assert out.shape == (6, 3) and len(losses) == 3
    for p, r in zip(whole.parameters(), ref):
        np.testing.assert_allclose(p.grad.numpy(), r, rtol=1e-5, atol=1e-6)


def test_split_errors_say_what_to_do():
    import shardflow.nn as nn
    from shardflow.distributed.pipelining import split_module

    seq = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    assert [len(s) for s in split_module(seq, [1, 2]).stages] == [1, 1, 1]
    with pytest.raises(ValueError, match="strictly increasing"):
        split_module(seq, [2, 1])
    with pytest.raises(ValueError, match="no pipe_split"):
        split_module(seq)
    with pytest.raises(TypeError, match="nn.Sequential"):
        split_module(nn.Linear(2, 2), [1])


def test_schedule_names_as_torch():
    import torch.distributed.pipelining as tp
    import torch.distributed.pipelining.schedules as ts

    from shardflow.distributed import pipelining as sp
    from shardflow.distributed.pipelining import schedules as ss

    assert set(tp.__all__) <= set(sp.__all__)
    for name in ("1f1b", "Interleaved1F1B", "gpipe", "LoopedBFS", "InterleavedZeroBubble",
                 "PipelineScheduleMulti", "ZBVZeroBubble", "DualPipeV"):
        assert ss.get_schedule_class(name).__name__ == ts.get_schedule_class(name).__name__
    for lib in (ss, ts):
        with pytest.raises(ValueError, match="Unknown schedule name 'nope'"):
            lib.get_schedule_class("nope")
    with pytest.raises(NotImplementedError, match="V-shaped stage placement"):
        ss.ScheduleZBVZeroBubble([], 4)


def test_looped_bfs_order_is_torchs():
    """Each local stage's forwards over all micro-batches, then the stages in reverse with the
    micro-batches in reverse (torch's ``_calculate_single_rank_operations`` without its idle
    padding)."""
    from shardflow.distributed.pipelining import schedules

    sched = object.__new__(schedules.ScheduleLoopedBFS)
    sched.n_microbatches, sched.p, sched.v = 2, 2, 2
    assert sched._actions_of(1) == [("F", 1, 0), ("F", 1, 1), ("F", 3, 0), ("F", 3, 1),
                                    ("B", 3, 1), ("B", 3, 0), ("B", 1, 1), ("B", 1, 0)]
