"""``shardflow bench tp``: what global tensors cost, and tensor parallelism against Megatron.

Workload: GPT-mini of the engine benchmark's size (4 layers, d_model 256, 4 heads, seq 128,
vocab 256, batch 16, AdamW) built with ``shardflow.models.GPT``.

1. **Dispatch overhead** (this process, a world of one): a training step of the plain
   model against the same step with every parameter and the batch laid out as global
   tensors on a 1-rank placement (``data_tensor_parallel(model, 1, 1)``). Steps alternate
   between the two so that the machine's noise hits both; the figure is the ratio of medians.
2. **Tensor parallel** (relaunched on ``-n`` ranks, default 2, one BLAS thread per rank):
   the TP=n step time (median of the slowest rank) and the bytes the step's collectives move
   (recorded by ``comm_plan``), against the analytic Megatron count: per layer two
   all-reduces of the ``(B, T, C)`` activation forward and two backward, ``4 * L * B * T * C
   * 4`` bytes in all; plus the 1-rank step with the same thread count, for the speedup.

Rank 0 prints the tables. Targets: overhead within 5%; collectives and bytes equal to the
analytic count.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .. import _config
from .comm import _relaunch

CFG = dict(block_size=128, vocab_size=256, n_layer=4, n_head=4, n_embd=256)
BATCH = 16


def _model_and_batch():
    import shardflow as sf
    from shardflow.models import GPT, GPTConfig

    sf.manual_seed(0)
    model = GPT(GPTConfig(**CFG))
    g = np.random.default_rng(0)
    x = sf.tensor(g.integers(0, CFG["vocab_size"], size=(BATCH, CFG["block_size"])))
    y = sf.tensor(g.integers(0, CFG["vocab_size"], size=(BATCH, CFG["block_size"])))
    return model, x, y


def _step_fn(model, x, y):
    opt = model.configure_optimizers(0.1, 1e-4)

    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def _overhead(steps: int, warmup: int) -> None:
    from shardflow.distributed import sbp
    from shardflow.distributed.tensor_parallel import data_tensor_parallel

    plain_model, x, y = _model_and_batch()
    plain = _step_fn(plain_model, x, y)
    gmodel, gx, gy = _model_and_batch()
    mesh, data_sbp = data_tensor_parallel(gmodel, 1, 1, gmodel.tensor_parallel_plan())
    bb = [sbp.broadcast] * 2
    gx = gx.to_global(mesh, bb).to_global(sbp=data_sbp)
    gy = gy.to_global(mesh, bb).to_global(sbp=data_sbp)
    glob = _step_fn(gmodel, gx, gy)
    for _ in range(warmup):
        plain()
        glob()
    tp, tg = [], []
    for _ in range(steps):
        for fn, out in ((plain, tp), (glob, tg)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    mp, mg = statistics.median(tp), statistics.median(tg)
    print("global-tensor dispatch overhead, GPT-mini training step, 1 process "
          f"(median of {steps} alternating steps)")
    print("| step | plain eager ms | global tensors on a 1-rank placement ms | overhead |")
    print("|---|---|---|---|")
    print(f"| GPT-mini b{BATCH} AdamW | {mp * 1e3:.1f} | {mg * 1e3:.1f} | {100 * (mg / mp - 1):+.1f}% |")
    print(f"target: within 5% -> {'met' if mg / mp <= 1.05 else 'NOT met'}\n", flush=True)


def _tensor_parallel(steps: int, warmup: int) -> int:
    from shardflow import comm
    from shardflow.distributed import comm_plan, sbp
    from shardflow.distributed.tensor_parallel import data_tensor_parallel

    world = comm.init()
    n, rank = world.size, world.rank

    def timed(step):
        for _ in range(warmup):
            step()
        times = []
        for _ in range(steps):
            world.barrier()
            t0 = time.perf_counter()
            step()
            dt = np.array([time.perf_counter() - t0])
            world.all_reduce(dt, op="max")
            times.append(float(dt[0]))
        return statistics.median(times)

    # one rank's step, same thread count (rank 0 alone; the others wait)
    one = None
    if rank == 0:
        m1, x1, y1 = _model_and_batch()
        one = timed_local(_step_fn(m1, x1, y1), steps, warmup)
    world.barrier()
    model, x, y = _model_and_batch()
    mesh, data_sbp = data_tensor_parallel(model, 1, n, model.tensor_parallel_plan())
    bb = [sbp.broadcast] * 2
    gx, gy = x.to_global(mesh, bb), y.to_global(mesh, bb)
    step = _step_fn(model, gx, gy)
    with comm_plan() as plan:
        step()
    t = timed(step)
    if rank == 0:
        L, T, C = CFG["n_layer"], CFG["block_size"], CFG["n_embd"]
        act = BATCH * T * C * 4
        want_n, want_bytes = 4 * L, 4 * L * act
        got = plan.counts()
        print(f"tensor parallel GPT-mini (TP={n}, 1 BLAS thread per rank; median of {steps} steps, "
              "slowest rank)")
        print("| layout | step ms | speedup | collectives per step | bytes per step | "
              "Megatron analytic |")
        print("|---|---|---|---|---|---|")
        print(f"| 1 rank | {one * 1e3:.1f} | 1.00 | 0 | 0 | 0 |")
        print(f"| TP={n} | {t * 1e3:.1f} | {one / t:.2f} | "
              + ", ".join(f"{v} {k}" for k, v in sorted(got.items()))
              + f" | {plan.bytes():,} | {want_n} all_reduce, {want_bytes:,} |")
        ok = dict(got) == {"all_reduce": want_n} and plan.bytes() == want_bytes
        print(f"collectives and bytes equal to the analytic count: {'yes' if ok else 'NO'}")
    return 0


def timed_local(step, steps, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench tp", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="tensor-parallel ranks (default 2)")
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--skip-overhead", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if _config.launch_info().launcher == "none":
        if not args.skip_overhead:
            _overhead(args.steps, args.warmup)
        return _relaunch("shardflow.bench.tp", args.n, [*argv, "--skip-overhead"])
    return _tensor_parallel(args.steps, args.warmup)


if __name__ == "__main__":
    sys.exit(main())
