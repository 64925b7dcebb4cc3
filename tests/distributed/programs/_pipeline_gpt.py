"""What the pipeline programs share: a GPT-mini (4 layers), its data, and :func:`run_schedule`,
which trains it pipelined and checks every step against one process on the whole batch."""

import numpy as np

import shardflow as sf
from shardflow.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleLoopedBFS,
    pipeline_groups,
)
from shardflow.models.gpt import GPT, GPTConfig
from shardflow.models.gpt_pipeline import gpt_loss, gpt_pipe

CFG = GPTConfig(block_size=8, vocab_size=32, n_layer=4, n_head=2, n_embd=16)
LR, STEPS = 0.5, 2


def build():
    sf.manual_seed(0)
    return GPT(CFG)


def data(step, rows):
    g = np.random.default_rng(100 + step)
    return g.integers(0, 32, (rows, 8)), g.integers(0, 32, (rows, 8))


def sgd(params):
    for p in params:
        p.array -= LR * p.grad.array
        p.grad = None


def reference(rows):
    """One process, whole batch: per step the loss and every parameter's gradient by name."""
    ref = build()
    out = []
    for step in range(STEPS):
        idx, tgt = data(step, rows)
        _, loss = ref(sf.tensor(idx), sf.tensor(tgt))
        loss.backward()
        out.append((loss.item(), {n: p.grad.numpy().copy() for n, p in ref.named_parameters()}))
        sgd(ref.parameters())
    return out


def run_schedule(world, kind, pp, dp, m, rows=4):
    """Train ``STEPS`` steps with schedule ``kind`` (gpipe, 1f1b; interleaved, looped_bfs,
    zero_bubble: two stages per rank) on ``pp`` stages x ``dp`` replicas, ``m`` micro-batches of ``rows`` rows per replica;
    the mean micro-batch loss and every gradient of this rank's stages must equal one
    process's (1e-5)."""
    ref = reference(rows * dp)
    pp_group, dp_group, st = pipeline_groups(pp, dp)
    rep = world.rank % dp
    model = build()
    names = {id(p): n for n, p in model.named_parameters()}
    multi = {"interleaved": ScheduleInterleaved1F1B, "looped_bfs": ScheduleLoopedBFS,
             "zero_bubble": ScheduleInterleavedZeroBubble}
    v = 2 if kind in multi else 1
    pipe = gpt_pipe(model, pp * v)
    ids = [k * pp + st for k in range(v)]
    stages = [PipelineStage(pipe.stages[s], s, pp * v, group=pp_group, tied=pipe.tied_for(s),
                            dp_group=dp_group) for s in ids]
    if kind in multi:
        sched = multi[kind](stages, m, loss_fn=gpt_loss)
    else:
        sched = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[kind](stages[0], m, loss_fn=gpt_loss)
    params = [p for s in stages for p in s.submod.parameters()]
    params = list({id(p): p for p in params}.values())
    for step in range(STEPS):
        idx, tgt = data(step, rows * dp)
        mine = slice(rep * rows, (rep + 1) * rows)
        args = (sf.tensor(idx[mine]),) if 0 in ids else ()
        losses = []
        kw = dict(target=sf.tensor(tgt[mine]), losses=losses) if pp * v - 1 in ids else {}
        sched.step(*args, **kw)
        ref_loss, ref_grads = ref[step]
        if losses:
            mean = np.mean([loss.item() for loss in losses])
            if dp > 1:
                mean = np.mean(dp_group.all_gather_object(float(mean)))
            assert abs(mean - ref_loss) < 1e-5, (kind, step, mean, ref_loss)
        for p in params:
            d = np.abs(p.grad.numpy() - ref_grads[names[id(p)]]).max()
            assert d < 1e-5, (kind, step, names[id(p)], d)
        sgd(params)
    return stages, sched
