"""``shardflow bench amp``: mixed precision and gradient compression, losses and step times.

Task: the GPT of ``bench/workloads.py`` (pre-LN blocks, causal SDPA, tied embeddings,
vocab 256; weights drawn N(0, 0.02) as in nanoGPT, biases zero; AdamW lr 1e-3) on a
learnable synthetic language: sequences of a fixed random Markov chain over 256 tokens whose
every token has 4 likely successors, 5% of tokens uniform noise (the batches come from
seeded generators, so every run sees the same data). ``--size small`` (default: 2 layers,
d_model 128, 4 heads, 64 tokens) keeps 200 steps x 2 runs to minutes on a shared 2-core
machine; ``--size mini`` is the engine benchmark's GPT-mini (4 layers, d_model 256, 128
tokens), about 5-10 s a step there.

``--part precision`` (one process): the same model, weights and batches trained ``--steps``
steps (default 200) in float32 and under ``autocast('cpu', dtype=bfloat16)``; reports the
loss at the start and the mean of the last 20 steps, the relative gap of bf16 to fp32, and
the median step time; PyTorch's eager float32 and CPU-autocast bf16 step times on the same
model are measured in the same process (``--torch-steps``, default 8, the first 2 untimed)
for the ratio. Also
the per-op cost of the cast hook: a chain of 16-element multiplies (an op outside the
policy) outside and inside an autocast region, and a 64x64 linear inside and outside.

``--part compression`` (relaunched on ``-n`` ranks, default 2, one BLAS thread each):
DistributedDataParallel training of the same GPT-mini for ``--hook-steps`` steps (default
200; batch 8 per rank) with no hook, ``fp16_compress_hook``, ``bf16_compress_hook`` and
``powerSGD_hook`` (ranks ``--powersgd-rank``, default 4 and 32, from step
``--powersgd-start``, default 50); reports the final loss
(mean of the last 10 steps) and its gap to uncompressed, the median step time of the
slowest rank, and the bytes each rank hands to the comm layer per step
(``CountingProcessGroup``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .. import _config
from .comm import _relaunch
from .workloads import gpt_mini

V = 256
SIZES = {"small": {"n_layer": 2, "d_model": 128, "n_head": 4, "block_size": 64},
         "mini": {"n_layer": 4, "d_model": 256, "n_head": 4, "block_size": 128}}


def _build(lib, size: str):
    """The GPT, with nanoGPT's N(0, 0.02) weights (the workload's default init makes the tied
    embedding's logits huge: a loss of about 170 at step 0)."""
    lib.manual_seed(0)
    model = gpt_mini(lib, **SIZES[size])
    with lib.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                lib.nn.init.normal_(p, 0.0, 0.02)
            else:
                lib.nn.init.zeros_(p)
        for m in model.modules():
            if isinstance(m, lib.nn.LayerNorm):
                lib.nn.init.ones_(m.weight)
    return model


class MarkovText:
    """Token batches from a fixed random chain: each token has 4 likely successors."""

    def __init__(self, seed: int = 0, T: int = 64):
        self.T = T
        g = np.random.default_rng(seed)
        self.succ = g.integers(0, V, (V, 4))
        self.g = np.random.default_rng(seed + 1)

    def batch(self, b: int):
        g, T = self.g, self.T
        seq = np.empty((b, T + 1), np.int64)
        seq[:, 0] = g.integers(0, V, b)
        choice = g.integers(0, 4, (b, T))
        noise = g.random((b, T)) < 0.05  # 5% uniformly random tokens
        rand = g.integers(0, V, (b, T))
        for t in range(T):
            nxt = self.succ[seq[:, t], choice[:, t]]
            seq[:, t + 1] = np.where(noise[:, t], rand[:, t], nxt)
        return seq[:, :-1], seq[:, 1:]


def _loss(lib, model, x, y):
    logits = model(x)  # (B, T, V)
    return lib.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def _train(lib, steps, batch, autocast, size):
    model = _build(lib, size)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    data = MarkovText(0, SIZES[size]["block_size"])
    losses, times = [], []
    for _ in range(steps):
        x, y = data.batch(batch)
        x, y = lib.from_numpy(x), lib.from_numpy(y)
        t0 = time.perf_counter()
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast):
            loss = _loss(lib, model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.item()))
    return losses, times


def _op_overhead(sf, n=2000):
    """us per op: 16-element multiplies outside/inside autocast; a 64x64 linear both ways."""
    a = sf.ones(16, requires_grad=True)
    x, w = sf.randn(64, 64), sf.randn(64, 64, requires_grad=True)

    def chain():
        t0 = time.perf_counter()
        y = a
        for _ in range(n):
            y = y * 1.0
        return (time.perf_counter() - t0) / n * 1e6

    def lin():
        t0 = time.perf_counter()
        for _ in range(n // 10):
            sf.nn.functional.linear(x, w)
        return (time.perf_counter() - t0) / (n // 10) * 1e6

    out = {}
    for label, fn in (("mul 16", chain), ("linear 64x64", lin)):
        off, on = [], []
        for _ in range(5):
            off.append(fn())
            with sf.autocast("cpu"):
                on.append(fn())
        out[label] = (statistics.median(off), statistics.median(on))
    return out


def precision(args) -> int:
    import torch

    import shardflow as sf

    torch.set_num_threads(1)
    sf_fp32, t_fp32 = _train(sf, args.steps, args.batch, False, args.size)
    sf_bf16, t_bf16 = _train(sf, args.steps, args.batch, True, args.size)
    th = {}
    for ac in (False, True):
        _, tt = _train(torch, args.torch_steps, args.batch, ac, args.size)
        th[ac] = statistics.median(tt[2:] or tt)
    tail = 20
    f32, b16 = float(np.mean(sf_fp32[-tail:])), float(np.mean(sf_bf16[-tail:]))
    cfg = SIZES[args.size]
    print(f"GPT {cfg['n_layer']}L d{cfg['d_model']} ({args.size}) on a Markov-chain language, "
          f"{args.steps} AdamW steps, batch {args.batch} x {cfg['block_size']} tokens, one process, 1 BLAS thread")
    print(f"{'run':<26} | {'loss@0':>7} | {'loss last 20':>12} | {'gap vs fp32':>11} | "
          f"{'ms/step':>8} | {'torch ms/step':>13} | {'ratio':>6}")
    for name, losses, times, ac in (("shardflow float32", sf_fp32, t_fp32, False),
                                    ("shardflow autocast bf16", sf_bf16, t_bf16, True)):
        last = float(np.mean(losses[-tail:]))
        ms = statistics.median(times[2:]) * 1e3
        print(f"{name:<26} | {losses[0]:7.3f} | {last:12.4f} | {(last - f32) / f32:+11.2%} | "
              f"{ms:8.1f} | {th[ac] * 1e3:13.1f} | {ms / (th[ac] * 1e3):5.2f}x")
    print(f"bf16 final loss within 2% of float32: {'yes' if abs(b16 - f32) <= 0.02 * f32 else 'NO'}")
    print("\nper-op cost of the cast hook (us/op, median of 5)")
    print(f"{'op':<16} | {'no region':>9} | {'in autocast':>11}")
    for label, (off, on) in _op_overhead(sf).items():
        print(f"{label:<16} | {off:9.2f} | {on:11.2f}")
    return 0


def _compression_worker(args) -> int:
    import shardflow as sf
    from shardflow.distributed.algorithms import CountingProcessGroup
    from shardflow.distributed.algorithms.ddp_comm_hooks import default_hooks
    from shardflow.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    from shardflow.nn.parallel import DistributedDataParallel

    from ..comm import init

    world = init()
    rank = world.rank
    rows = []
    psgd_ranks = [int(v) for v in str(args.powersgd_rank).split(",")]
    for hook in ("none", "fp16", "bf16", *(f"powersgd{r}" for r in psgd_ranks)):
        counter = CountingProcessGroup(world)
        model = _build(sf, args.size)
        ddp = DistributedDataParallel(model, process_group=counter)
        if hook in ("fp16", "bf16"):
            ddp.register_comm_hook(counter, getattr(default_hooks, f"{hook}_compress_hook"))
        elif hook.startswith("powersgd"):
            state = ps.PowerSGDState(counter, matrix_approximation_rank=int(hook[8:]),
                                     start_powerSGD_iter=args.powersgd_start)
            ddp.register_comm_hook(state, ps.powerSGD_hook)
        opt = sf.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        step_bytes = []
        losses, times = [], []
        data = MarkovText(100 + rank, SIZES[args.size]["block_size"])
        for _ in range(args.hook_steps):
            x, y = data.batch(8)
            x, y = sf.from_numpy(x), sf.from_numpy(y)
            world.barrier()
            counter.reset()
            t0 = time.perf_counter()
            loss = _loss(sf, ddp, x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            step_bytes.append(counter.total_bytes("all_reduce"))
            losses.append(float(loss.item()))
        timed = times[args.powersgd_start + 2:] or times
        tot = world.all_gather(np.array([np.mean(losses[-10:]), statistics.median(timed)]))
        rows.append((hook, float(tot[:, 0].mean()), float(tot[:, 1].max()), step_bytes[-1],
                     losses[0]))
        ddp.remove_hooks()
    if rank == 0:
        base = rows[0]
        cfg = SIZES[args.size]
        print(f"DDP GPT {cfg['n_layer']}L d{cfg['d_model']} ({args.size}) on {world.size} ranks, "
              f"{args.hook_steps} AdamW steps, batch 8 x {cfg['block_size']} per rank, 1 BLAS thread per rank")
        print(f"{'hook':<10} | {'loss@0':>7} | {'loss last 10':>12} | {'gap':>7} | {'ms/step':>8} | "
              f"{'MB/step/rank':>12} | {'bytes vs none':>13}")
        for hook, last, ms, nbytes, first in rows:
            print(f"{hook:<10} | {first:7.3f} | {last:12.4f} | {(last - base[1]) / base[1]:+7.2%} | "
                  f"{ms * 1e3:8.1f} | {nbytes / 1e6:12.3f} | {nbytes / base[3]:13.3f}")
        print(f"powersgdR: matrix_approximation_rank=R, start_powerSGD_iter={args.powersgd_start}; "
              "bytes = what each rank hands to all_reduce in one (compressed) step")
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench amp", description=__doc__.split("\n")[0])
    p.add_argument("--part", default="precision,compression", help="comma list of: precision, compression")
    p.add_argument("--steps", type=int, default=200, help="training steps of the precision part")
    p.add_argument("--batch", type=int, default=16, help="batch of the precision part")
    p.add_argument("--size", choices=list(SIZES), default="small", help="GPT size (module docstring)")
    p.add_argument("--torch-steps", type=int, default=8, help="PyTorch steps run for the ratio (the first 2 untimed)")
    p.add_argument("--hook-steps", type=int, default=200, help="DDP steps per hook")
    p.add_argument("--powersgd-rank", default="4,32", help="comma list of PowerSGD ranks")
    p.add_argument("--powersgd-start", type=int, default=50, help="start_powerSGD_iter")
    p.add_argument("-n", type=int, default=2, help="ranks of the compression part")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.worker:
        return _compression_worker(args)
    parts = args.part.split(",")
    rc = 0
    if "precision" in parts:
        rc |= precision(args)
    if "compression" in parts:
        if _config.launch_info().launcher != "none":
            return _compression_worker(args)
        rc |= _relaunch("shardflow.bench.amp", args.n, [*argv, "--worker"])
    return rc


if __name__ == "__main__":
    sys.exit(main())
