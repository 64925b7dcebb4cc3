"""Pipeline parallelism on 2 ranks: GPipe, 1F1B, interleaved 1F1B, looped BFS and interleaved
zero-bubble train GPT-mini like one
process; and memory: stage 0 of 2 with 8 micro-batches holds 8 activations under GPipe and 2
under 1F1B, and 1F1B's traced peak (tracemalloc: every array the step allocates, saved graph
tensors included) is under 0.6 of GPipe's. Each rank prints its peaks."""

import tracemalloc

import shardflow as sf
import shardflow.distributed as dist
from shardflow import comm
from shardflow.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from shardflow.models.gpt_pipeline import gpt_loss, gpt_pipe

from ._pipeline_gpt import build, data, run_schedule


def main(argv):
    dist.init_process_group()
    world = comm.get_world()
    for kind in ("gpipe", "1f1b", "interleaved", "looped_bfs", "zero_bubble"):
        run_schedule(world, kind, 2, 1, 4)
    peaks = {}
    idx, tgt = data(0, 16)
    for kind in ("gpipe", "1f1b"):
        stage = PipelineStage(gpt_pipe(build(), 2).stages[world.rank], world.rank, 2, group=world)
        sched = (ScheduleGPipe if kind == "gpipe" else Schedule1F1B)(stage, 8, loss_fn=gpt_loss)
        args = (sf.tensor(idx),) if world.rank == 0 else ()
        kw = dict(target=sf.tensor(tgt)) if world.rank == 1 else {}
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        sched.step(*args, **kw)
        traced = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        peaks[kind] = (stage.peak_inflight, stage.peak_live_bytes, traced)
    print(f"rank {world.rank} peaks {peaks}", flush=True)
    if world.rank == 0:
        assert peaks["gpipe"][0] == 8 and peaks["1f1b"][0] == 2, peaks
        assert peaks["1f1b"][2] < 0.6 * peaks["gpipe"][2], peaks
    assert peaks["1f1b"][1] < peaks["gpipe"][1], peaks
