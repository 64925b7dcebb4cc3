"""``shardflow bench zero``: ZeRO stages 1-3 against DDP: step time, bytes moved, memory.

Started as a plain process, it launches MPI jobs (one BLAS thread per rank):

1. **Speed and bytes** (``-n`` ranks, default 2): for each ``--models`` workload (GPT-mini:
   4 layers, d 256, T 128, vocab 256, batch 8 per rank, AdamW) and each stage, a training
   step of shardflow and of PyTorch (gloo) in the same job: stage 0 = DDP, 1 = DDP +
   ZeroRedundancyOptimizer, 2 = ``fully_shard(reshard_after_forward=False)`` per block and
   the root, 3 = the same with ``True``. All eight variants are built first and timed in
   interleaved rounds (one step of each per round), so that they see the same machine load.
   Median step time of the slowest rank; ``vs DDP``
   is the stage's time over shardflow's DDP, ``vs torch`` over PyTorch's same stage.
   Bytes per step are counted by shardflow's collectives (all-reduce counted twice, as the
   ZeRO paper does: reduce-scatter + all-gather) and divided by Ψ (parameter bytes): the
   paper's analytic figures are 2Ψ (DDP), 2Ψ (stages 1 and 2: reduce-scatter + all-gather),
   3Ψ (stage 3). shardflow's stage 1 keeps DDP's all-reduce and adds an all-gather (3Ψ), as
   PyTorch's ZeroRedundancyOptimizer does.
2. **Memory** (one fresh job per stage x ranks x model, ``--mem-ranks`` default 2,4;
   models GPT-mini and a 10x larger GPT, 8 layers d 576, batch 1 x T 64 per rank): peak
   resident memory of a training step minus the process's RSS before the model was built
   (``/proc/self/status`` VmHWM, reset after a warm-up step; ``MALLOC_MMAP_THRESHOLD_`` is
   fixed so that freed arrays go back to the OS). The baseline is read after one step of a
   tiny GPT has loaded the runtime (numba and the compiled kernels, ~130 MB per process
   whatever the model: not model memory). ``--unit layer`` makes every Linear its
   own ``fully_shard`` unit (smaller gathered buffers; stages 2 and 3 only). ``act`` is a plain local step's peak over
   its resting RSS minus its gradients (activations and temporaries). The analytic model
   states per rank, float32 AdamW (4 B parameters + 4 B gradients + 8 B moments):
   16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N; the ZeRO paper's mixed-precision figures beside them:
   16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N. ``ratio`` = measured / (float32 analytic + act).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from .. import _config
from .ddp import free_port

STAGES = (0, 1, 2, 3)
MODELS = {
    # name: (title, gpt_mini kwargs, batch per rank, T)
    "mini": ("GPT-mini 4L d256 h4 T128 V256", dict(n_layer=4, d_model=256, n_head=4), 8, 128),
    "10x": ("GPT 8L d576 h8 T128 V256 (10x)", dict(n_layer=8, d_model=576, n_head=8), 8, 128),
}
STAGE_NAMES = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}


def _relaunch(n: int, argv: list[str], capture: bool = False):
    from ..comm.launcher import build_mpiexec_command, rank_env

    cmd = build_mpiexec_command(n, [sys.executable, "-u", "-m", "shardflow.bench.zero", *argv],
                                tag_output=False)
    env = rank_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                    "MALLOC_MMAP_THRESHOLD_": "131072"})
    if capture:
        return subprocess.run(cmd, env=env, capture_output=True, text=True)
    return subprocess.run(cmd, env=env).returncode


# ----------------------------------------------------------------------------- building
def _sf_setup(stage: int, kw: dict, world, unit: str = "block"):
    import shardflow as sf
    import shardflow.optim as optim
    from shardflow.nn.parallel import DistributedDataParallel

    from .workloads import gpt_mini

    sf.manual_seed(0)
    model = gpt_mini(sf, **kw)
    params = sum(p.array.size for p in model.parameters())
    if stage in (0, 1):
        run = DistributedDataParallel(model) if world.size > 1 else model
        if stage == 0:
            opt = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        else:
            from shardflow.distributed.zero import ZeroRedundancyOptimizer

            opt = ZeroRedundancyOptimizer(model.parameters(), optim.AdamW, lr=3e-4, weight_decay=0.1)
    else:
        from shardflow.distributed.fsdp import fully_shard

        for block in model.h:
            if unit == "layer":  # each Linear its own unit: smaller gathered buffers
                for m in block.modules():
                    if isinstance(m, sf.nn.Linear):
                        fully_shard(m, reshard_after_forward=stage == 3)
            fully_shard(block, reshard_after_forward=stage == 3)
        fully_shard(model, reshard_after_forward=stage == 3)
        run = model
        opt = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    return sf, model, run, opt, params


def _sf_counter(stage, model, opt) -> int:
    """Cumulative bytes of the ZeRO collectives (the ZeRO paper's count: all-gather output,
    reduce-scatter input, all-reduce 2x its buffer)."""
    if stage == 0:
        return 0
    if stage == 1:
        return opt.stats["bytes"]
    b = model.fsdp_stats()["bytes"]
    return sum(v * (2 if k.startswith("all_reduce") else 1) for k, v in b.items())


def _ddp_bytes(stage, run, world) -> int:
    """DDP's all-reduce per step (stages 0 and 1), counted 2x its buckets."""
    if stage > 1 or world.size == 1:
        return 0
    return sum(run.bucket_sizes()) * 4 * 2


def _torch_setup(stage: int, kw: dict):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from .workloads import gpt_mini

    torch.manual_seed(0)
    model = gpt_mini(torch, **kw)
    if stage in (0, 1):
        run = DistributedDataParallel(model)
        if stage == 0:
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        else:
            from torch.distributed.optim import ZeroRedundancyOptimizer

            opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.AdamW, lr=3e-4,
                                          weight_decay=0.1)
    else:
        from torch.distributed.fsdp import fully_shard

        for block in model.h:
            fully_shard(block, reshard_after_forward=stage == 3)
        fully_shard(model, reshard_after_forward=stage == 3)
        run = model
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    return torch, run, opt


def _batch(rank, b, T):
    rng = np.random.default_rng(rank)
    return rng.integers(0, 256, (b, T)), rng.integers(0, 256, (b, T))


def _step_fn(lib, run, opt, x, y):
    F = lib.nn.functional

    def step():
        logits = run(x)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


# ----------------------------------------------------------------------------- speed worker
def _speed_worker(args) -> int:
    import torch
    import torch.distributed as tdist

    from ..comm import init

    torch.set_num_threads(1)
    world = init()
    rank, n = world.rank, world.size
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                             world_size=n)
    rows = []
    for name in args.models.split(","):
        title, kw, b, T = MODELS[name]
        xs, ys = _batch(rank, b, T)
        steps, nbytes, params = {}, {}, 0
        for stage in STAGES:  # every variant built first, then timed in interleaved rounds
            sf, model, run, opt, params = _sf_setup(stage, kw, world)
            step = _step_fn(sf, run, opt, sf.tensor(xs), sf.tensor(ys))
            step()  # warm-up (optimizer state, plans)
            before = _sf_counter(stage, model, opt)
            step()
            nbytes[stage] = _ddp_bytes(stage, run, world) + _sf_counter(stage, model, opt) - before
            steps[("sf", stage)] = step
            th, trun, topt = _torch_setup(stage, kw)
            tstep = _step_fn(th, trun, topt, torch.from_numpy(xs), torch.from_numpy(ys))
            tstep()
            steps[("torch", stage)] = tstep
        times = {k: [] for k in steps}
        for _ in range(args.steps):  # one step of each variant per round: the same load for all
            for k, step in steps.items():
                (world.barrier if k[0] == "sf" else tdist.barrier)()
                t0 = time.perf_counter()
                step()
                times[k].append(time.perf_counter() - t0)
        for stage in STAGES:
            med = np.array([statistics.median(times[("sf", stage)]),
                            statistics.median(times[("torch", stage)])])
            worst = world.all_gather(med).max(axis=0)
            rows.append((title, stage, worst[0], worst[1], nbytes[stage] / (4 * params), params))
        del steps
        gc.collect()
    tdist.destroy_process_group()
    if rank == 0:
        print(f"\nZeRO training step on {n} ranks (ms, median of {args.steps} interleaved rounds, "
              "slowest rank); bytes per step / Ψ (parameter bytes)")
        hdr = (f"{'workload':<32} | {'stage':<7} | {'shardflow':>9} | {'vs DDP':>6} | "
               f"{'torch':>8} | {'vs torch':>8} | {'bytes/Ψ':>7} | {'paper':>5}")
        print(hdr)
        print("-" * len(hdr))
        paper = {0: 2, 1: 2, 2: 2, 3: 3}
        base = {}
        for title, stage, ts, tt, ratio, _params in rows:
            if stage == 0:
                base[title] = ts
            print(f"{title:<32} | {STAGE_NAMES[stage]:<7} | {ts * 1e3:9.1f} | "
                  f"{ts / base[title]:6.2f} | {tt * 1e3:8.1f} | {ts / tt:8.2f} | {ratio:7.2f} | "
                  f"{paper[stage]:5d}")
        print("bytes: shardflow's own collectives (the DDP all-reduce counted 2x its buffer; "
              "padding of uneven shards included); paper: the ZeRO paper's analytic figure")
    return 0


# ----------------------------------------------------------------------------- memory worker
def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _warm_runtime(sf) -> None:
    """Load the runtime a training step uses before the baseline is read: one local AdamW
    step of a tiny GPT (d 32, 1 layer) imports numba and compiles (or loads from its disk
    cache) every kernel specialisation the measured step calls (kernels are specialised by
    dtype and ndim, not by shape). That code is about 130 MB per process, the same for any
    model and any N, like the interpreter and NumPy that the baseline already holds; left
    in, it was counted as model memory (the first measured step loaded it)."""
    import shardflow.optim as optim

    from .workloads import gpt_mini

    model = gpt_mini(sf, n_layer=1, d_model=32, n_head=2)
    opt = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    xs, ys = _batch(0, 1, 8)
    _step_fn(sf, model, opt, sf.tensor(xs), sf.tensor(ys))()
    del model, opt
    gc.collect()


def _mem_worker(args) -> int:
    from ..comm import init

    world = init()
    rank = world.rank
    title, kw, _, _ = MODELS[args.model]
    b, T = 1, 64
    import shardflow as sf  # noqa: F401 - imported before the baseline

    _warm_runtime(sf)
    world.barrier()
    gc.collect()
    base = _status_kb("VmRSS")
    out = {}
    if args.stage < 0:  # a plain local step: activations and temporaries
        import shardflow.optim as optim

        from .workloads import gpt_mini

        sf.manual_seed(0)
        model = gpt_mini(sf, **kw)
        opt = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        params = sum(p.array.size for p in model.parameters())
        xs, ys = _batch(rank, b, T)
        step = _step_fn(sf, model, opt, sf.tensor(xs), sf.tensor(ys))
        step()
        gc.collect()
        _reset_peak()
        rest = _status_kb("VmRSS")
        step()
        out["act"] = max(0, _status_kb("VmHWM") - rest - 4 * params)
    else:
        sf_, model, run, opt, params = _sf_setup(args.stage, kw, world, args.unit)
        xs, ys = _batch(rank, b, T)
        step = _step_fn(sf_, run, opt, sf_.tensor(xs), sf_.tensor(ys))
        step()
        gc.collect()
        _reset_peak()
        step()
        step()
        out["peak"] = _status_kb("VmHWM") - base
    out["params"] = params
    worst = world.all_gather_object(out)
    if rank == 0:
        agg = {k: max(w[k] for w in worst) for k in out}
        print("MEM " + json.dumps(agg), flush=True)
    return 0


def _memory_table(args) -> None:
    print(f"\nMemory per rank (MB, peak of a training step over the RSS before the model; batch 1 "
          f"x T 64 per rank; max over ranks; fully_shard units: {args.unit})")
    hdr = (f"{'model':<32} | {'N':>2} | {'stage':<7} | {'measured':>8} | {'act':>5} | "
           f"{'fp32 analytic':>13} | {'paper':>7} | {'ratio':>5}")
    print(hdr)
    print("-" * len(hdr))
    for name in args.mem_models.split(","):
        title = MODELS[name][0]
        act_run = _relaunch(1, ["--worker", "mem", "--model", name, "--stage", "-1"], capture=True)
        act = _parse_mem(act_run)
        for n in [int(v) for v in args.mem_ranks.split(",")]:
            for stage in STAGES:
                if stage < 2 and args.unit != "block":
                    continue
                res = _parse_mem(_relaunch(n, ["--worker", "mem", "--model", name, "--stage",
                                               str(stage), "--unit", args.unit], capture=True))
                if res is None or act is None:
                    print(f"{title:<32} | {n:2d} | {STAGE_NAMES[stage]:<7} | failed")
                    continue
                psi = res["params"]
                ours = {0: 16 * psi, 1: 8 * psi + 8 * psi / n, 2: 4 * psi + 12 * psi / n,
                        3: 16 * psi / n}[stage]
                paper = {0: 16 * psi, 1: 4 * psi + 12 * psi / n, 2: 2 * psi + 14 * psi / n,
                         3: 16 * psi / n}[stage]
                ratio = res["peak"] / (ours + act["act"])
                print(f"{title:<32} | {n:2d} | {STAGE_NAMES[stage]:<7} | {res['peak'] / 1e6:8.1f} | "
                      f"{act['act'] / 1e6:5.1f} | {ours / 1e6:13.1f} | {paper / 1e6:7.1f} | "
                      f"{ratio:5.2f}")
    print("fp32 analytic: 16Ψ, 8Ψ+8Ψ/N, 4Ψ+12Ψ/N, 16Ψ/N bytes (float32 AdamW); paper: the ZeRO "
          "paper's mixed-precision 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N; ratio = measured / "
          "(fp32 analytic + act). DDP's flat gradient buckets add 4Ψ to stages 0 and 1.")


def _parse_mem(proc):
    for line in proc.stdout.splitlines():
        if line.startswith("MEM "):
            return json.loads(line[4:])
    sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
    return None


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench zero", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="ranks of the speed run (default 2)")
    p.add_argument("--models", default="mini", help="speed run workloads: mini, 10x")
    p.add_argument("--steps", type=int, default=5, help="timed rounds (one step per variant)")
    p.add_argument("--mem-models", default="mini,10x", help="memory table workloads")
    p.add_argument("--mem-ranks", default="2,4", help="world sizes of the memory table")
    p.add_argument("--unit", choices=("block", "layer"), default="block",
                   help="fully_shard units of the memory table: each block (default), or each "
                        "Linear too (only stages 2 and 3 are measured)")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--worker", choices=("speed", "mem"), help=argparse.SUPPRESS)
    p.add_argument("--model", default="mini", help=argparse.SUPPRESS)
    p.add_argument("--stage", type=int, default=0, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.worker == "speed":
        return _speed_worker(args)
    if args.worker == "mem":
        return _mem_worker(args)
    if _config.launch_info().launcher != "none":
        print("shardflow bench zero starts its own MPI jobs; run it as a plain process",
              file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} CPUs")
    if not args.skip_speed:
        rc = _relaunch(args.n, ["--worker", "speed", "--port", str(args.port or free_port()),
                                "--models", args.models, "--steps", str(args.steps)])
        if rc:
            return rc
    if not args.skip_memory:
        _memory_table(args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
