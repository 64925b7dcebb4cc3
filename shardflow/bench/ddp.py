"""``shardflow bench ddp``: DistributedDataParallel step time vs PyTorch DDP (gloo), 2 ranks.

Started as a plain process, it relaunches itself on ``-n`` ranks (default 2) through
mpiexec with one BLAS/OpenMP thread per rank (2 ranks share the machine fairly). In the
same job, for each workload of the engine benchmark (MLP 784-1024-1024-10 batch 128 per
rank, CNN batch 64, GPT-mini batch 16 per rank; ``shardflow/bench/workloads.py``) and
``mlp-wide`` (784-2048-2048-2048-10, batch 32 per rank: 10.5 M parameters, 42 MB of
gradients against a short backward, the workload whose communication is a large share of
the step, for the overlap goal) and for each framework (shardflow on MPI; torch with
``torch.distributed`` gloo over TCP on localhost):

* ``local``: a training step (forward, loss, backward, optimizer step) with no DDP;
* ``ddp``: the same step through DistributedDataParallel (25 MB buckets; shardflow reduces
  them in 1 MB pieces, each started once its gradients are in: ``nn/parallel/reducer.py``);
* ``comm``: the gradient all_reduce alone: the same bucket sizes reduced back to back;
* ``hidden``: fraction of the communication that overlapped backward,
  ``clip(1 - (ddp - local) / comm, 0, 1)``.

Every configuration runs on its own copy of the model (same initialisation), and they are
timed in rounds, one step of each per round (``interleaved_times``), so that the machine's
load changing during the run falls on every column alike. Times are medians over rounds of
the slowest rank. Rank 0 prints one table with the load average.

``--variants`` adds shardflow rows that differ in how the reduction is cut and progressed,
for the overlap study (docs/DISTRIBUTED.md, "Overlap"); the ``shardflow`` row is the
default DDP (1 MB pieces, each started once its gradients are in, large gradients reduced
in place, and the background progress thread ``comm/mpi_progress.py`` when
``SHARDFLOW_PROGRESS_THREAD`` asks for it: by default only with more ranks than cores):
``buckets`` (each bucket one all-reduce started
when the whole bucket is in, progress only from the hooks and the final wait: the reducer
before this study), ``hooks`` (pieces, never the thread), ``buckets+thread`` (whole
buckets, always the thread); ``thread`` (pieces, always the thread). Rows are measured one after
the other on the same model, in one job.

``--compile`` adds a ``compiled`` row: the same ``local`` and ``ddp`` steps through
``shardflow.compile_step``, whose plan starts each bucket's all-reduce from the backward
schedule (the parameters' post-accumulate-grad hooks, run when a gradient is final), so its
``hidden`` column measures the compiled step's overlap.

``--comm-hook fp16|bf16|powersgd|allreduce`` registers the same DDP communication hook on
both frameworks (shardflow's ``shardflow.distributed.algorithms.ddp_comm_hooks``, torch's
``torch.distributed.algorithms.ddp_comm_hooks``; PowerSGD with ``--powersgd-rank`` (4) and
``start_powerSGD_iter=2``, so the timed steps are compressed), and adds the bytes a
shardflow rank hands to the comm layer per step (``MB/step``, ``CountingProcessGroup``).
The ``comm`` column stays the uncompressed all-reduce. Exception: torch's PowerSGD hook
aborts here under gloo (``gloo::EnforceNotMet ... Received data size doesn't match
expected size``, torch 2.13 CPU, 2 ranks on localhost), so with ``powersgd`` the torch row
runs without a hook and the table says so.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time

import numpy as np

from .. import _config
from .comm import _relaunch


def _bucket_elems(sizes, cap_bytes, itemsize=4):
    out, cur = [], 0
    for n in reversed(sizes):
        if cur and (cur + n) * itemsize > cap_bytes:
            out.append(cur)
            cur = 0
        cur += n
    if cur:
        out.append(cur)
    return out


def _sf_hook(name, group, rank):
    from shardflow.distributed.algorithms.ddp_comm_hooks import default_hooks
    from shardflow.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps

    if name == "powersgd":
        return ps.PowerSGDState(group, matrix_approximation_rank=rank, start_powerSGD_iter=2), ps.powerSGD_hook
    return group, getattr(default_hooks, "allreduce_hook" if name == "allreduce" else f"{name}_compress_hook")


def _torch_hook(name, rank):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps

    if name == "powersgd":
        return ps.PowerSGDState(None, matrix_approximation_rank=rank, start_powerSGD_iter=2), ps.powerSGD_hook
    return None, getattr(default_hooks, "allreduce_hook" if name == "allreduce" else f"{name}_compress_hook")


def _mlp_wide(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                         nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))


def _workloads():
    from .workloads import WORKLOADS, Workload, _ce, _sgd

    macs = 784 * 2048 + 2 * 2048 * 2048 + 2048 * 10
    wide = Workload(
        "MLP-wide 784-2048x3-10 (b32, SGD-m)", _mlp_wide,
        lambda r: (r.standard_normal((32, 784)).astype(np.float32), r.integers(0, 10, 32)),
        _sgd, _ce, 3 * 2 * macs * 32)
    return {**WORKLOADS, "mlp-wide": wide}


def step_times(step, steps, warmup, barrier) -> list[float]:
    """Seconds of each of ``steps`` calls of ``step`` after ``warmup`` untimed ones, every
    timed step started together on all ranks (``barrier``)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        barrier()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def interleaved_times(fns: dict, steps, warmup, barrier) -> dict:
    """Median seconds of each function of ``fns``, timed in rounds (one call of each per
    round, in order, each started together on all ranks), so that a change in the machine's
    load during the run falls on every column alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {k: [] for k in fns}
    for _ in range(steps):
        for k, fn in fns.items():
            barrier()
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


VARIANTS = ("buckets", "hooks", "buckets+thread", "thread")


def _sf_steps(wl, rank, world, hook="none", psgd_rank=4, compiled=False, variants=()):
    """``({name: step}, bytes_of_a_ddp_step)``: shardflow's local step, DDP step,
    comm-only step and each variant's DDP step, each on its own copy of the model (same
    initialisation), so that they can be timed in rounds."""
    import shardflow as sf
    from shardflow.distributed.algorithms import CountingProcessGroup
    from shardflow.nn.parallel import DistributedDataParallel

    rng = np.random.default_rng(rank)
    x, y = wl.make_batch(rng)
    x, y = sf.from_numpy(x), sf.from_numpy(y)

    def make_step(wrap):
        sf.manual_seed(0)
        model = wl.build(sf)
        m = wrap(model)
        opt = wl.make_optimizer(sf, model)
        if compiled:  # zero_grad(set_to_none), forward, backward, step: one compiled plan
            cs = sf.compile_step(m, opt, lambda mm, a, b: wl.loss(sf, mm, a, b), fullgraph=True)
            return m, lambda: cs(x, y)

        def step():
            opt.zero_grad()
            wl.loss(sf, m, x, y).backward()
            opt.step()
        return m, step

    fns = {}
    fns["local"] = make_step(lambda m: m)[1]
    counter = CountingProcessGroup(world)

    def wrap_ddp(model):
        ddp = DistributedDataParallel(model, process_group=counter)
        if hook != "none":
            ddp.register_comm_hook(*_sf_hook(hook, counter, psgd_rank))
        return ddp

    ddp, fns["ddp"] = make_step(wrap_ddp)
    counter.reset()
    fns["ddp"]()
    step_bytes = counter.total_bytes("all_reduce")
    flats = [np.ones(n, np.float32) for n in ddp.bucket_sizes()]

    def comm_only():
        for f in flats:
            world.all_reduce(f, "avg")

    fns["comm"] = comm_only
    for variant in variants:  # the overlap study: other ways to progress the same reduction
        if variant not in VARIANTS:
            raise ValueError(f"bench ddp --variants: unknown variant {variant!r}; expected "
                             f"some of {', '.join(VARIANTS)}")

        def wrap_variant(model, variant=variant):
            vddp = DistributedDataParallel(model, process_group=world)
            red = vddp.reducer
            if variant.startswith("buckets"):
                red.set_piece_bytes(red.bucket_bytes_cap)
            red.background_progress = variant.endswith("thread")  # forced on, or off
            return vddp

        fns[variant] = make_step(wrap_variant)[1]
    return fns, step_bytes


def _torch_steps(wl, rank, hook="none", psgd_rank=4) -> dict:
    """torch's local step, DDP step (gloo) and comm-only step, each on its own model copy."""
    import torch
    import torch.distributed as tdist
    from torch.nn.parallel import DistributedDataParallel

    rng = np.random.default_rng(rank)
    x, y = wl.make_batch(rng)
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def make_step(wrap):
        torch.manual_seed(0)
        model = wl.build(torch)
        m = wrap(model)
        opt = wl.make_optimizer(torch, model)

        def step():
            opt.zero_grad()
            wl.loss(torch, m, x, y).backward()
            opt.step()
        return model, step

    def wrap_ddp(model):
        ddp = DistributedDataParallel(model)
        if hook not in ("none", "powersgd"):  # powersgd: see the module docstring
            ddp.register_comm_hook(*_torch_hook(hook, psgd_rank))
        return ddp

    model, local = make_step(lambda m: m)
    fns = {"torch local": local, "torch ddp": make_step(wrap_ddp)[1]}
    sizes = [p.numel() for p in model.parameters()]
    flats = [torch.ones(n) for n in _bucket_elems(sizes, 25 << 20)]

    def comm_only():
        for f in flats:
            tdist.all_reduce(f)
            f /= tdist.get_world_size()

    fns["torch comm"] = comm_only
    return fns


def _worker(args) -> int:
    import torch
    import torch.distributed as tdist

    from ..comm import init

    torch.set_num_threads(1)
    world = init()
    rank, n = world.rank, world.size
    port = args.port
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                             world_size=n)
    workloads = _workloads()
    variants = [v for v in args.variants.split(",") if v]
    rows = []
    for name in args.models.split(","):
        wl = workloads[name]
        steps = args.steps if name != "gpt" else max(3, args.steps // 3)
        fns, step_bytes = _sf_steps(wl, rank, world, args.comm_hook, args.powersgd_rank,
                                    variants=variants)
        fns.update(_torch_steps(wl, rank, args.comm_hook, args.powersgd_rank))
        med = interleaved_times(fns, steps, args.warmup, world.barrier)
        res_c = ()
        if args.compile:
            cfns, _ = _sf_steps(wl, rank, world, args.comm_hook, args.powersgd_rank,
                                compiled=True)
            cmed = interleaved_times(cfns, steps, args.warmup, world.barrier)
            res_c = (cmed["local"], cmed["ddp"], cmed["comm"])
        order = ["local", "ddp", "comm", "torch local", "torch ddp", "torch comm", *variants]
        worst = world.all_gather(np.array([med[k] for k in order] + list(res_c))).max(axis=0)
        k = 6 + len(variants)
        rows.append((wl.name, worst[:3], worst[3:6], step_bytes, worst[6:k], worst[k:]))
    tdist.destroy_process_group()
    if rank == 0:
        _print_table(args, n, variants, rows)
    return 0


def _print_table(args, n, variants, rows) -> None:
    torch_hook = "none (its PowerSGD hook aborts under gloo here)" if args.comm_hook == "powersgd" \
        else args.comm_hook
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if sys.platform == "linux" else "?"
    print(f"DistributedDataParallel training step on {n} ranks (ms, median, slowest rank); "
          f"comm hook: shardflow {args.comm_hook}, torch {torch_hook}; load average {load}")
    hdr = (f"{'workload':<44} | {'fw':<24} | {'local':>8} | {'ddp':>8} | {'comm':>8} | "
           f"{'hidden':>6} | {'ddp vs torch':>12} | {'MB/step':>8} | {'comm/step':>9}")
    print(hdr)
    print("-" * len(hdr))
    for title, s, t, nbytes, var, c in rows:
        fws = [("shardflow", s), ("torch", t)]
        fws += [(f"shardflow {v}", (s[0], var[i], s[2])) for i, v in enumerate(variants)]
        if len(c):
            fws.append(("compiled", c))
        for fw, (loc, ddp, com) in fws:
            hidden = float(np.clip(1 - (ddp - loc) / com, 0, 1)) if com > 0 else 0.0
            ratio = "1.00x" if fw == "torch" else f"{ddp / t[1]:.2f}x"
            mb = f"{nbytes / 1e6:8.2f}" if fw == "shardflow" else f"{'':8}"
            print(f"{title:<44} | {fw:<24} | {loc * 1e3:8.1f} | {ddp * 1e3:8.1f} | "
                  f"{com * 1e3:8.1f} | {hidden:6.0%} | {ratio:>12} | {mb} | {com / ddp:9.0%}")
    print("hidden = 1 - (ddp - local) / comm: share of the gradient all_reduce that "
          "overlapped backward; ddp vs torch = shardflow DDP step / torch DDP step; "
          "comm/step = comm / ddp")


def free_port() -> int:
    """A TCP port free on this host now (for torch's gloo rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench ddp", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--models", default="mlp,gpt",
                   help="comma list of: mlp, cnn, gpt, mlp-wide (module docstring)")
    p.add_argument("--variants", default="",
                   help="comma list of extra shardflow rows: buckets, hooks, buckets+thread, thread "
                        "(module docstring)")
    p.add_argument("--steps", type=int, default=10, help="timed steps (GPT: a third)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--port", type=int, default=0, help="TCP port for torch gloo (0: pick)")
    p.add_argument("--comm-hook", default="none", choices=["none", "allreduce", "fp16", "bf16", "powersgd"],
                   help="DDP communication hook on both frameworks (module docstring)")
    p.add_argument("--powersgd-rank", type=int, default=4, help="PowerSGD matrix_approximation_rank")
    p.add_argument("--compile", action="store_true",
                   help="add a row: the shardflow steps through shardflow.compile_step")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if _config.launch_info().launcher == "none":
        if args.port == 0:
            argv = [*argv, "--port", str(free_port())]
        return _relaunch("shardflow.bench.ddp", args.n, argv)
    return _worker(args)


if __name__ == "__main__":
    sys.exit(main())
