"""One configuration of ``shardflow bench suite``, run by every rank of an mpiexec job.

For each model: shardflow DDP steps, then PyTorch DDP (gloo) steps, timed as the suite's
docstring says; per-step times are gathered (the slowest rank per step), rank 0 writes
the result document (and the environment block) to the ``--worker`` path.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import time
import tracemalloc

import numpy as np

from .ddp import step_times
from .suite_models import flops_per_sample, loss_fn, make_optimizer, suite_models


def gemm_gflops() -> float:
    """This rank's float32 GEMM rate (512^3 matmul, best of 5), GFLOP/s."""
    a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    return 2 * 512**3 / best / 1e9


def _run_shardflow(spec, x_np, y_np, world, warmup, steps):
    import shardflow as sf
    from shardflow.nn.parallel import DistributedDataParallel

    sf.manual_seed(0)
    model = DistributedDataParallel(spec.build(sf), process_group=world)
    opt = make_optimizer(sf, model, spec.optimizer)
    x, y = sf.from_numpy(x_np), sf.from_numpy(y_np)

    def step():
        opt.zero_grad()
        loss_fn(sf, model, x, y).backward()
        opt.step()

    times = step_times(step, steps, warmup, world.barrier)
    gc.collect()
    tracemalloc.start()  # one extra untimed step: peak bytes of arrays alive
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return times, peak


def _run_torch(spec, x_np, y_np, warmup, steps):
    import torch
    import torch.distributed as tdist
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = DistributedDataParallel(spec.build(torch))
    opt = make_optimizer(torch, model, spec.optimizer)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def step():
        opt.zero_grad()
        loss_fn(torch, model, x, y).backward()
        opt.step()

    return step_times(step, steps, warmup, tdist.barrier), None


def _attempt(fn, *args):
    try:
        return fn(*args), None
    except MemoryError:
        return None, "OOM"
    except Exception as e:  # noqa: BLE001 - one failing model must not end the suite
        return None, f"ERR: {type(e).__name__}: {e}"


def _environment(world, has_torch: bool) -> dict:
    from ..comm.mpi_lib import mpi

    env = {"python": platform.python_version(), "numpy": np.__version__,
           "platform": platform.platform(), "cores": os.cpu_count(),
           "threads_per_rank": os.environ.get("OMP_NUM_THREADS", "?"),
           "hosts": sorted(set(world.all_gather_object(platform.node())))}
    try:
        import shardflow

        env["shardflow"] = shardflow.__version__
    except Exception:  # noqa: BLE001
        pass
    try:
        env["mpi_library"] = mpi().Get_library_version().replace("\x00", "").strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        env["mpi_library"] = "unknown"
    if has_torch:
        import torch

        env["torch"] = torch.__version__
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                              platform.processor())
    except OSError:
        env["cpu"] = platform.processor()
    env["topology"] = _topology()
    try:
        with open("/proc/meminfo") as f:
            env["memory_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return env


def _topology() -> str:
    """Sockets, NUMA nodes and logical cores of this host (Linux /proc and /sys)."""
    import glob

    try:
        with open("/proc/cpuinfo") as f:
            sockets = len({ln.split(":")[1].strip() for ln in f if ln.startswith("physical id")})
    except OSError:
        sockets = 0
    numa = len(glob.glob("/sys/devices/system/node/node[0-9]*"))
    return (f"{sockets or '?'} socket(s), {numa or '?'} NUMA node(s), {os.cpu_count()} logical "
            "cores; ranks of one host talk through shared memory (vader), hosts through TCP")


def worker(args) -> int:
    from ..comm import init

    world = init()
    rank, n = world.rank, world.size
    quick, steps, warmup = args.quick, args.steps, args.warmup
    has_torch = False
    if not args.no_torch:
        try:
            import torch
            import torch.distributed as tdist

            torch.set_num_threads(1)
            tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                                     rank=rank, world_size=n)
            has_torch = True
        except ImportError:
            pass
    peak = world.all_gather_object(gemm_gflops())
    models = suite_models(quick)
    rows = []
    for key in args.models.split(","):
        spec = models[key]
        rng = np.random.default_rng(rank)
        x_np, y_np = spec.make_batch(rng, spec.batch)
        flops = None
        if has_torch:
            import torch

            flops = flops_per_sample(torch, spec.build(torch), spec, torch.from_numpy(x_np))
        for fw in ("shardflow", "torch") if has_torch else ("shardflow",):
            if fw == "shardflow":
                got, err = _attempt(_run_shardflow, spec, x_np, y_np, world, warmup, steps)
            else:
                got, err = _attempt(_run_torch, spec, x_np, y_np, warmup, steps)
            times = got[0] if got else [float("nan")] * steps
            errs = world.all_gather_object(err)
            err = next((e for e in errs if e), None)
            per_step = world.all_gather(np.array(times, dtype=np.float64)).reshape(n, -1).max(0)
            mem = world.all_gather_object(got[1] if got else None)
            step_s = float(statistics.median(per_step)) if err is None else None
            rows.append({"model": key, "title": spec.title, "framework": fw, "ranks": n,
                         "batch_per_rank": spec.batch, "tokens_per_sample": spec.tokens,
                         "error": err, "step_s": step_s, "steps_s": per_step.tolist(),
                         "flops_per_sample": flops,
                         "memory_bytes": max((m for m in mem if m is not None), default=None)})
            gc.collect()
    env = _environment(world, has_torch)
    if has_torch:
        import torch.distributed as tdist

        tdist.destroy_process_group()
    if rank == 0:
        with open(args.worker, "w") as f:
            json.dump({"ranks": n, "gemm_gflops_per_rank": peak, "steps": steps,
                       "warmup": warmup, "rows": rows, "environment": env}, f)
    return 0
