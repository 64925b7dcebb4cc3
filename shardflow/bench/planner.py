"""``shardflow bench planner``: the planner's predictions against measured steps on this machine.

For the GPT task at two sizes (``--sizes``, default ``small`` and ``large``) and every valid
layout of 1, 2 and 4 ranks (``--ranks``) that ``shardflow train`` runs -- DDP, data
parallelism on global tensors, ZeRO 1/2/3, dp x tp, pipelines with dp and tp and their
micro-batch counts (``--microbatches``, multiples of pp) -- the planner predicts the step
time and the peak memory per rank (``--profile``, default ``planner-profile.json``: run
``shardflow plan calibrate`` first, on the same quiet machine), then one mpiexec job per
layout measures them (one BLAS thread per rank):

* memory first: one throwaway instance of the layout runs a step untraced (imports, compiled
  kernels, caches); then ``tracemalloc`` runs from before a second instance is built, one
  warm-up step, then the peak of traced bytes over one more step (parameters, gradients,
  optimizer state, buffers, activations: what the planner predicts), the maximum over ranks;
* then, with tracing off, ``--warmup`` steps and ``--steps`` timed steps, each started after
  a barrier; the step time is the slowest rank's, the figure the median.

Every layout is measured ``--rounds`` times (default 3), in interleaved rounds: each round
measures every layout once, odd rounds in reverse order, so the machine's drift and bursts
of load fall on different layouts; a row's figure is the median over its rounds
(``rounds_s`` keeps each). One run per layout does not reproduce its own order: two quiet
runs of this grid agreed at a Spearman of ~0.5 (docs/PLANNER.md, issue 26).

Each step is what the layout's entry point runs: ``parallelize(...).step`` for global
tensors, pipelines and ZeRO-1; ``DistributedDataParallel`` for DDP; ``fully_shard`` (each
block, then the root) for ZeRO 2/3; forward, backward and the AdamW step, from a fixed
batch.

Output: one table (predicted and measured time and memory, their errors), the summary
(``median_time_error``, ``median_memory_error``, ``worst_time_error``,
``worst_memory_error``: absolute relative errors; ``spearman``: the mean over (size, ranks)
groups of the rank correlation of predicted and measured step times; ``first_choice_gap``:
the worst over groups of how much slower the planner's first choice measured than the
best measured layout; ``measurement_spearman``: the mean over groups of the Spearman
correlation between every two rounds, the ceiling any prediction can reach against one
round), and ``--json FILE`` with one row per layout and those keys.

``--from-json FILE[,FILE...]`` measures nothing: it re-predicts the stored rows (several
runs merged as rounds) with the current model and ``--profile`` and prints the stored and
the new summary: the model's accuracy offline.

With ``--json`` the file is rewritten after every job (``complete``: false until the grid
ends), and ``--max-seconds`` starts no job after that many seconds of measuring: a run cut short by a time limit
(a lent machine's, a CI job's) keeps every layout it measured. Each progress line ends with
the layout's measured time and memory next to the prediction. One layout's job takes about
6 s on a quiet 16-core host (session 34: 44 layouts, about 4.5 minutes a round).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from .. import _config

SIZES = {  # name: GPT dims (the train task's defaults are 3L d128 h4 T64 batch 32)
    "small": dict(n_layer=4, n_head=4, n_embd=128, block_size=64, vocab_size=96, batch_size=16),
    "large": dict(n_layer=4, n_head=4, n_embd=256, block_size=128, vocab_size=96, batch_size=16),
    "tiny": dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=32, batch_size=8),
}


def _model(dims):
    import shardflow as sf
    from shardflow.models import GPT, GPTConfig

    sf.manual_seed(0)
    return GPT(GPTConfig(block_size=dims["block_size"], vocab_size=dims["vocab_size"],
                         n_layer=dims["n_layer"], n_head=dims["n_head"], n_embd=dims["n_embd"]))


def _layout_args(L) -> list:
    return ["--dp", str(L.dp), "--tp", str(L.tp), "--pp", str(L.pp), "--zero", str(L.zero),
            "--m", str(L.microbatches), "--sync", L.grad_sync]


# ----------------------------------------------------------------------------- worker
def _worker(args) -> int:
    import tracemalloc

    import shardflow as sf
    import shardflow.distributed as dist
    from shardflow import comm

    from .ddp import step_times

    dist.init_process_group()
    world = comm.get_world()
    dims = SIZES[args.size]
    rng = np.random.default_rng(0)
    B, T, V = dims["batch_size"], dims["block_size"], dims["vocab_size"]
    x = sf.tensor(rng.integers(0, V, (B, T)))
    y = sf.tensor(rng.integers(0, V, (B, T)))
    # a first instance, untraced: imports, JIT-compiled kernels and caches are not the step's
    _build_step(args, dims, world, x, y)()
    gc.collect()
    tracemalloc.start()
    step = _build_step(args, dims, world, x, y)
    step()  # warm-up (optimizer state made, first calls)
    gc.collect()
    tracemalloc.reset_peak()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    gc.collect()
    times = step_times(step, args.steps, args.warmup, world.barrier)
    per_step = world.all_gather(np.array(times, np.float64)).reshape(world.size, -1).max(0)
    peaks = world.all_gather_object(int(peak))
    if world.rank == 0:
        with open(args.worker, "w") as f:
            json.dump({"step_s": float(statistics.median(per_step)), "steps_s": per_step.tolist(),
                       "memory": max(peaks), "memory_by_rank": peaks}, f)
    return 0


def _build_step(args, dims, world, x, y):
    """The training step of the layout (module docstring)."""
    import shardflow as sf
    from shardflow.models.gpt_pipeline import gpt_loss, gpt_pipe

    model = _model(dims)
    opt = model.configure_optimizers(0.1, 1e-3, betas=(0.9, 0.99))
    dp, tp, pp, zero, m = args.dp, args.tp, args.pp, args.zero, args.m
    rows = x.shape[0] // dp
    sl = slice(world.rank * rows, (world.rank + 1) * rows) if tp == 1 and pp == 1 else slice(None)
    xl, yl = sf.tensor(x.numpy()[sl]), sf.tensor(y.numpy()[sl])
    if tp == 1 and pp == 1 and zero >= 2:
        from shardflow.distributed.fsdp import fully_shard

        for block in model.transformer.h:
            fully_shard(block, reshard_after_forward=zero == 3)
        fully_shard(model, reshard_after_forward=zero == 3)
        opt = model.configure_optimizers(0.1, 1e-3, betas=(0.9, 0.99))
        return _plain_step(model, opt, xl, yl)
    if tp == 1 and pp == 1 and zero == 0 and args.sync == "bucketed" and world.size > 1:
        from shardflow.nn.parallel import DistributedDataParallel

        return _plain_step(DistributedDataParallel(model), opt, xl, yl)
    if world.size == 1:
        return _plain_step(model, opt, x, y)
    par = sf.parallelize(model, opt, dp=dp, tp=tp, pp=pp, zero=zero, batch_size=x.shape[0],
                         n_microbatches=m if pp > 1 else None, split=gpt_pipe, print_plan=False,
                         loss_fn=gpt_loss if pp > 1 else (lambda out, t: gpt_loss(out[0], t)))
    return lambda: par.step(x, y)


def _plain_step(model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
    return step


# ----------------------------------------------------------------------------- parent
def _measure(n, size, L, args) -> dict:
    from ..comm.launcher import build_mpiexec_command, kill_session, rank_env

    with tempfile.TemporaryDirectory(prefix="shardflow-bench-planner-") as tmp:
        out = os.path.join(tmp, "r.json")
        argv = [sys.executable, "-u", "-m", "shardflow.bench.planner", "--worker", out, "--size", size,
                "--steps", str(args.steps), "--warmup", str(args.warmup), *_layout_args(L)]
        cmd = build_mpiexec_command(n, argv, tag_output=False)
        env = rank_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = proc.communicate(timeout=args.job_timeout)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid, grace=1.0)
            return {"error": f"timed out after {args.job_timeout:g} s"}
        if proc.returncode or not os.path.exists(out):
            return {"error": f"exit {proc.returncode}: {log[-1500:]}"}
        with open(out) as f:
            return json.load(f)


def _progress(e, res: dict) -> str:
    """The end of a layout's progress line: its measured figures next to the predicted ones."""
    if res.get("step_s") is None:
        return f"failed: {str(res.get('error', '?')).splitlines()[-1][:200] if res.get('error') else '?'}"
    return (f"{res['step_s'] * 1e3:.1f} ms (predicted {e.step_time * 1e3:.1f}), "
            f"{res['memory'] / 2**20:.1f} MiB (predicted {e.memory / 2**20:.1f})")


def _write(path, plan, results, t0, prof, *, partial: bool, stopped=None):
    """Rows and summary of what ``results`` holds so far; written to ``path`` (when given) with
    ``complete`` false while the grid is still running (or was stopped), so that a run killed
    or cut short by ``--max-seconds`` keeps every layout it measured (``--from-json`` reads it)."""
    rows = [_row(size, n, e, res) for (size, n, e), res in zip(plan, results) if res]
    summary = summarize(rows)
    summary["seconds"] = round(time.monotonic() - t0, 1)
    summary["load_average_end"] = round(os.getloadavg()[0], 2)
    summary["profile"] = prof.name
    summary["complete"] = not partial and stopped is None
    if stopped:
        summary["stopped"] = stopped
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump({"rows": rows, **summary}, f, indent=1)
        os.replace(tmp, path)  # whole file or the previous one, never half of one
    return rows, summary


def _row(size, n, e, rounds: list) -> dict:
    """One layout's row: the prediction, and the measurement over ``rounds`` (the median of
    the rounds' step medians; each round's figure in ``rounds_s``; memory the median too)."""
    L = e.layout
    ok = [r for r in rounds if r.get("step_s") is not None]
    err = next((r["error"] for r in rounds if r.get("error")), None)
    row = {"size": size, "ranks": n, "layout": L.describe(), "dp": L.dp, "tp": L.tp, "pp": L.pp,
           "zero": L.zero, "microbatches": L.microbatches, "grad_sync": L.grad_sync,
           "predicted_time": e.step_time, "predicted_memory": e.memory,
           "measured_time": statistics.median(r["step_s"] for r in ok) if ok else None,
           "measured_memory": statistics.median(r["memory"] for r in ok) if ok else None,
           "rounds_s": [r["step_s"] for r in ok], "steps_s": [r.get("steps_s") for r in ok],
           "error": err}
    return row


def measurement_spearman(rows: list) -> dict:
    """How well the measurement reproduces its own order: per (size, ranks) group, the mean
    Spearman correlation between every two rounds' step times (rows with ``rounds_s``); the
    ceiling any prediction can reach against one round. Empty with fewer than two rounds."""
    groups = {}
    for r in rows:
        if r.get("rounds_s") and len(r["rounds_s"]) >= 2:
            groups.setdefault(f"{r['size']}/{r['ranks']}", []).append(r["rounds_s"])
    out = {}
    for name, rs in groups.items():
        k = min(len(x) for x in rs)
        if len(rs) < 3:
            continue
        pairs = [_spearman([x[i] for x in rs], [x[j] for x in rs]) for i in range(k) for j in range(i + 1, k)]
        out[name] = statistics.mean(pairs)
    return out


def _spearman(a, b) -> float:
    def ranks(v):
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for val in set(v):  # ties share their mean rank
            idx = [i for i, x in enumerate(v) if x == val]
            r[idx] = np.mean(r[idx])
        return r
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(list(a)), ranks(list(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def summarize(rows: list) -> dict:
    """The summary keys (module docstring) from rows with predicted/measured time and memory."""
    ok = [r for r in rows if r.get("measured_time")]
    te = [abs(r["predicted_time"] / r["measured_time"] - 1) for r in ok]
    me = [abs(r["predicted_memory"] / r["measured_memory"] - 1) for r in ok if r.get("measured_memory")]
    groups = {}
    for r in ok:
        groups.setdefault((r["size"], r["ranks"]), []).append(r)
    sp, gaps = {}, {}
    for key, rs in groups.items():
        name = f"{key[0]}/{key[1]}"
        if len(rs) >= 3:
            sp[name] = _spearman([r["predicted_time"] for r in rs], [r["measured_time"] for r in rs])
        first = min(rs, key=lambda r: r["predicted_time"])
        best = min(r["measured_time"] for r in rs)
        gaps[name] = first["measured_time"] / best - 1
    valid_sp = [v for v in sp.values() if v == v]
    ceiling = measurement_spearman(rows)
    return {"measurement_spearman_by_group": ceiling,
            "measurement_spearman": statistics.mean(ceiling.values()) if ceiling else None,
            "layouts": len(rows), "measured": len(ok),
            "median_time_error": statistics.median(te) if te else None,
            "median_memory_error": statistics.median(me) if me else None,
            "worst_time_error": max(te) if te else None,
            "worst_memory_error": max(me) if me else None,
            "spearman": statistics.mean(valid_sp) if valid_sp else None,
            "spearman_by_group": sp,
            "first_choice_gap": max(gaps.values()) if gaps else None,
            "first_choice_gap_by_group": gaps}


def _table(rows, summary) -> str:
    hdr = (f"{'size':<6} {'N':>2} {'layout':<22} {'pred ms':>9} {'meas ms':>9} {'err':>6} "
           f"{'pred MiB':>9} {'meas MiB':>9} {'err':>6}")
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        if r.get("error"):
            lines.append(f"{r['size']:<6} {r['ranks']:>2} {r['layout']:<22} {r['predicted_time'] * 1e3:9.1f} "
                         f"{'FAILED':>9}  {r['error'][:60]}")
            continue
        lines.append(f"{r['size']:<6} {r['ranks']:>2} {r['layout']:<22} {r['predicted_time'] * 1e3:9.1f} "
                     f"{r['measured_time'] * 1e3:9.1f} {(r['predicted_time'] / r['measured_time'] - 1) * 100:+5.0f}% "
                     f"{r['predicted_memory'] / 2**20:9.1f} {r['measured_memory'] / 2**20:9.1f} "
                     f"{(r['predicted_memory'] / r['measured_memory'] - 1) * 100:+5.0f}%")
    s = summary

    def pct(v):
        return "-" if v is None else f"{v * 100:.1f}%"
    lines.append(f"\nmedian |time error| {pct(s['median_time_error'])}, worst {pct(s['worst_time_error'])}; "
                 f"median |memory error| {pct(s['median_memory_error'])}, worst {pct(s['worst_memory_error'])}; "
                 f"Spearman {s['spearman'] if s['spearman'] is None else round(s['spearman'], 3)} "
                 f"{ {k: round(v, 3) for k, v in s['spearman_by_group'].items()} }; first choice gap "
                 f"{pct(s['first_choice_gap'])} { {k: round(v, 3) for k, v in s['first_choice_gap_by_group'].items()} }")
    if s.get("measurement_spearman") is not None:
        lines.append(f"the measurement against itself (Spearman between rounds, the ceiling of any prediction): "
                     f"{s['measurement_spearman']:.3f} "
                     f"{ {k: round(v, 3) for k, v in s['measurement_spearman_by_group'].items()} }")
    return "\n".join(lines)


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench planner", description=__doc__.split("\n")[0])
    p.add_argument("--profile", default=None, help="planner profile (default planner-profile.json)")
    p.add_argument("--sizes", default="small,large", help=f"GPT sizes among {sorted(SIZES)}")
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--microbatches", default="1,2", help="micro-batches per pipeline, as multiples of pp")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3,
                   help="measure every layout this many times, in interleaved rounds (odd rounds in "
                        "reverse order); the figure is the median over rounds")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="measure at most this many layouts per group")
    p.add_argument("--json", help="write rows and summary here")
    p.add_argument("--job-timeout", type=float, default=600.0)
    p.add_argument("--max-seconds", type=float, default=0.0,
                   help="start no new job after this many seconds of measuring (0: no limit); the rows and summary "
                        "cover the rounds measured (the JSON is also rewritten after every job, so a "
                        "killed run keeps what it measured)")
    p.add_argument("--from-json", metavar="FILE",
                   help="measure nothing: re-predict the rows of an earlier --json run with --profile "
                        "and compare them with its stored measurements (the model's accuracy offline); "
                        "FILE1,FILE2,...: runs of the same grid merged as rounds (median per layout)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--size", default="small", help=argparse.SUPPRESS)
    for f in ("dp", "tp", "pp", "zero", "m"):
        p.add_argument("--" + f, type=int, default=1 if f != "zero" else 0, help=argparse.SUPPRESS)
    p.add_argument("--sync", default="", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.worker:
        return _worker(args)
    if _config.launch_info().launcher != "none":
        print("shardflow bench planner starts its own MPI jobs; run it as a plain process", file=sys.stderr)
        return 2
    from ..distributed.planner.auto import lm_spec, resolve_profile
    from ..distributed.planner.cost import estimate
    from ..distributed.planner.layout import enumerate_layouts
    from ..distributed.planner.search import model_shape

    try:
        prof = resolve_profile(args.profile)
    except (FileNotFoundError, ValueError) as e:
        print(f"shardflow bench planner: {e}", file=sys.stderr)
        return 2
    if args.from_json:
        return _repredict(args, prof)
    print(f"profile: {prof.label()}; load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
          flush=True)
    t0 = time.monotonic()
    mults = [int(v) for v in args.microbatches.split(",")]
    plan = []  # (size, ranks, estimate) in the planner's order per group
    for size in args.sizes.split(","):
        dims = SIZES[size]
        model = _model(dims)
        spec = lm_spec(model, dims["batch_size"], entry="train")
        for n in [int(v) for v in args.ranks.split(",")]:
            ms = sorted({k * p for k in mults for p in range(2, n + 1)})
            valid, _ = enumerate_layouts(n, model_shape(model), dims["batch_size"], "train", microbatches=ms)
            valid = [L for L in valid if L.pp == 1 or L.microbatches in {k * L.pp for k in mults}]
            ests = sorted((estimate(spec, L, prof) for L in valid), key=lambda e: e.step_time)
            if args.limit:
                ests = ests[:args.limit]
            plan += [(size, n, e) for e in ests]
    results = [[] for _ in plan]
    stopped, t_measure = None, time.monotonic()
    for k in range(args.rounds):
        # interleaved rounds: every layout once per round, odd rounds in reverse order, so a
        # slow drift of the machine (or a burst of load) falls on different layouts each time
        order = list(range(len(plan)))[::(-1 if k % 2 else 1)]
        for i in order:
            if args.max_seconds and time.monotonic() - t_measure > args.max_seconds:
                stopped = f"--max-seconds {args.max_seconds:g} reached in round {k + 1}"
                break
            size, n, e = plan[i]
            print(f"[bench planner] round {k + 1}/{args.rounds}: {size} on {n} rank(s): "
                  f"{e.layout.describe()} ...", end=" ", flush=True)
            res = _measure(n, size, e.layout, args)
            results[i].append(res)
            print(_progress(e, res), flush=True)
            if args.json:  # after every job: a run cut short keeps what it measured
                _write(args.json, plan, results, t0, prof, partial=True)
        if stopped:
            print(f"[bench planner] stopped: {stopped}; the rows hold the rounds measured", flush=True)
            break
    rows, summary = _write(args.json, plan, results, t0, prof, partial=False, stopped=stopped)
    print(_table(rows, summary))
    if args.json:
        print(f"wrote {args.json}")
    return 0 if all(not r.get("error") for r in rows) else 1


def _layout_of(row):
    from ..distributed.planner.layout import Layout

    return Layout(dp=row["dp"], tp=row["tp"], pp=row["pp"], zero=row["zero"],
                  microbatches=row["microbatches"], grad_sync=row["grad_sync"])


def repredict(rows: list, profile) -> list:
    """``rows`` of an earlier run (``--json``) with ``predicted_time`` and ``predicted_memory``
    recomputed by the current model with ``profile``; the measurements are kept, the old
    predictions move to ``stored_predicted_time`` / ``stored_predicted_memory``."""
    from ..distributed.planner.auto import lm_spec
    from ..distributed.planner.cost import estimate

    specs, out = {}, []
    for r in rows:
        if r["size"] not in specs:
            dims = SIZES[r["size"]]
            specs[r["size"]] = lm_spec(_model(dims), dims["batch_size"], entry="train")
        e = estimate(specs[r["size"]], _layout_of(r), profile)
        out.append({**r, "stored_predicted_time": r["predicted_time"],
                    "stored_predicted_memory": r["predicted_memory"],
                    "predicted_time": e.step_time, "predicted_memory": e.memory})
    return out


def merge_runs(docs: list) -> list:
    """Rows of several ``--json`` runs of the same grid as one run of several rounds: each
    layout's ``rounds_s`` holds every run's figure (its rounds, or its median), the
    measured time is their median; predictions and memory from the first run."""
    merged = {}
    for doc in docs:
        for r in doc["rows"]:
            key = (r["size"], r["ranks"], r["layout"])
            got = r.get("rounds_s") or ([r["measured_time"]] if r.get("measured_time") else [])
            if key not in merged:
                merged[key] = {**r, "rounds_s": list(got)}
            else:
                merged[key]["rounds_s"] += got
    rows = list(merged.values())
    for r in rows:
        if r["rounds_s"]:
            r["measured_time"] = statistics.median(r["rounds_s"])
    return rows


def _repredict(args, prof) -> int:
    docs = []
    for path in args.from_json.split(","):
        with open(path) as f:
            docs.append(json.load(f))
    doc = {"rows": merge_runs(docs)}
    rows = repredict(doc["rows"], prof)
    before, summary = summarize(doc["rows"]), summarize(rows)
    summary["profile"] = prof.name
    summary["from_json"] = args.from_json
    summary["stored_summary"] = {k: v for k, v in before.items()}
    print(f"profile: {prof.label()}; re-predicting {len(rows)} stored rows of {args.from_json} "
          "(measured values as stored, not re-measured)")
    print(_table(rows, summary))
    def f(v):
        return "-" if v is None else f"{v:.3f}"
    print("\nstored predictions -> this model, same measurements:")
    for k in ("median_time_error", "worst_time_error", "median_memory_error", "worst_memory_error",
              "spearman", "first_choice_gap"):
        print(f"  {k:22} {f(before[k])} -> {f(summary[k])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, **summary}, fh, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
