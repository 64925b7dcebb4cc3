"""``shardflow bench pipeline``: measured pipeline bubble vs ``(p - 1) / (m + p - 1)``, and
activation memory of GPipe vs 1F1B.

Started as a plain process, it relaunches itself on ``-n`` ranks (default 2) through
mpiexec with one BLAS thread per rank. The model is a chain of ``p`` equal stages (each
``--layers`` x Linear(``--width``) + Tanh), so the analytic bubble applies. For each
schedule and micro-batch count ``m`` (``--mb``, micro-batches of ``--rows`` rows), after
warm-up steps, every rank records per step the wall time and the time it spent computing
(forward/backward, not waiting on a receive); the measured bubble is ``1 - busy / wall``
(median over steps, mean over ranks). ``act MB`` is the tracemalloc peak of one step on
stage 0 (everything the step allocated, saved graph tensors included), ``inflight`` the
most micro-batches stage 0 held at once. PyTorch's pipelining needs its own process group
setup and is not compared here; the reference is the analytic figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tracemalloc

import numpy as np

from .. import _config
from .comm import _relaunch


def _worker(args) -> int:
    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.nn.functional as F

    from ..comm import init
    from ..distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleGPipe,
        bubble_fraction,
        split_module,
    )

    world = init()
    p, r = world.size, world.rank
    sf.manual_seed(0)
    layers = []
    for _ in range(p * args.layers):
        layers += [nn.Linear(args.width, args.width), nn.Tanh()]
    pipe = split_module(nn.Sequential(*layers), [2 * args.layers * i for i in range(1, p)])
    rows = []
    for m in [int(x) for x in args.mb.split(",")]:
        g = np.random.default_rng(m)
        x = sf.tensor(g.standard_normal((args.rows * m, args.width)).astype(np.float32))
        y = sf.tensor(g.standard_normal((args.rows * m, args.width)).astype(np.float32))
        for name, cls in (("GPipe", ScheduleGPipe), ("1F1B", Schedule1F1B)):
            stage = PipelineStage(pipe.stages[r], r, p, group=world)
            sched = cls(stage, m, loss_fn=F.mse_loss)
            a = (x,) if r == 0 else ()
            kw = {"target": y} if r == p - 1 else {}
            bubbles, walls = [], []
            for i in range(args.warmup + args.steps):
                world.barrier()
                sched.step(*a, **kw)
                stage.submod.zero_grad()
                if i >= args.warmup:
                    bubbles.append(sched.last_timing["bubble"])
                    walls.append(sched.last_timing["wall"])
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            world.barrier()
            sched.step(*a, **kw)
            act = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            stage.submod.zero_grad()
            mine = np.array([statistics.median(bubbles), statistics.median(walls), act,
                             stage.peak_inflight], dtype=np.float64)
            allr = np.asarray(world.all_gather(mine)).reshape(p, 4)
            rows.append((name, m, float(allr[:, 0].mean()), bubble_fraction(p, m),
                         float(allr[:, 1].max()), float(allr[0, 2]), int(allr[0, 3])))
    if r == 0:
        print(f"pipeline on {p} ranks: {p} stages of {args.layers} x Linear({args.width}) + Tanh, "
              f"micro-batches of {args.rows} rows; medians of {args.steps} steps")
        hdr = (f"{'schedule':<8} | {'m':>3} | {'bubble measured':>15} | {'analytic':>8} | "
               f"{'step ms':>8} | {'act MB (stage 0)':>16} | {'inflight':>8}")
        print(hdr)
        print("-" * len(hdr))
        for name, m, meas, ana, wall, act, infl in rows:
            print(f"{name:<8} | {m:3d} | {meas:15.3f} | {ana:8.3f} | {wall * 1e3:8.1f} | "
                  f"{act / 1e6:16.2f} | {infl:8d}")
        print("bubble measured = 1 - compute time / step wall time (mean over ranks); "
              "analytic = (p - 1) / (m + p - 1)")
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench pipeline", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="ranks = stages (default 2)")
    p.add_argument("--mb", default="1,2,4,8,16", help="micro-batch counts")
    p.add_argument("--rows", type=int, default=32, help="rows per micro-batch")
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=2, help="Linear layers per stage")
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if _config.launch_info().launcher == "none":
        return _relaunch("shardflow.bench.pipeline", args.n, argv)
    return _worker(args)


if __name__ == "__main__":
    sys.exit(main())


