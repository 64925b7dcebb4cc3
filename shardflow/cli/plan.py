"""``shardflow plan``: the fastest layout of a model on N ranks that fits in memory.

    shardflow plan calibrate [--ranks 1,2,4] [--out planner-profile.json]   # measure this machine
    shardflow plan --model gpt --ranks 4 [--config gpt.yaml] [--profile FILE|NAME] \\
                   [--mem-per-rank GB] [--batch-size B] [--n-layer ...]
    shardflow plan --model gpt --ranks 512 --profile a100-selene --n-embd 4096 ... --entry any
    shardflow plan published [--table megatron|dlperf]                      # the virtual cluster

The model is the ``shardflow train gpt`` task's GPT (``--config`` takes the train YAML; the
GPT flags override it; ``--vocab-size`` skips reading the corpus). Up to 30M parameters on a
measured profile the model itself is traced; otherwise tiny instances are traced and
extrapolated (``planner/scaling.py``), so a 175B model is planned without being built. The planner enumerates
dp x tp x pp x ZeRO x micro-batches (x recomputation and schedules with ``--entry any``),
refuses what cannot run (the reasons are listed with ``--refused``), and prints the ranked
table (predicted step time, tokens/s, memory per rank, communication volume and its exposed
share, bubble, MFU), why the winner wins, and ``--show K`` breakdowns (terms, collectives).
``--entry``: ``train`` (default: what ``shardflow train gpt`` runs), ``parallelize``, or
``any`` (what the cost model can express, for simulated clusters). Profiles: a file written
by ``plan calibrate``, or a built-in simulated one by name (``--list-profiles``).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]

_GPT_FLAGS = ("n_layer", "n_head", "n_embd", "block_size", "batch_size", "dropout")
LIVE_TRACE_PARAMS = 30_000_000  # up to this size the model itself is built and traced


def _parser():
    p = argparse.ArgumentParser(prog="shardflow plan", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--model", choices=("gpt",), default="gpt")
    p.add_argument("--config", help="a shardflow train YAML file (its GPT and batch keys are used)")
    p.add_argument("--ranks", type=int, required=False, help="world size to plan for")
    p.add_argument("--profile", help="profile file or built-in name (default planner-profile.json)")
    p.add_argument("--mem-per-rank", type=float, help="memory per rank, GiB (default: unlimited, "
                   "or the simulated device's memory)")
    p.add_argument("--entry", choices=("train", "parallelize", "any"), default="train")
    p.add_argument("--precision", choices=("fp32", "mixed"), default=None,
                   help="default fp32 (mixed for simulated GPU profiles)")
    for f in _GPT_FLAGS:
        p.add_argument("--" + f.replace("_", "-"), type=float if f == "dropout" else int, default=None)
    p.add_argument("--vocab-size", type=int, help="skip reading the corpus: plan for this vocabulary")
    p.add_argument("--top", type=int, default=20, help="rows of the table (default 20)")
    p.add_argument("--show", type=int, default=1, help="breakdowns of the K best layouts")
    p.add_argument("--refused", action="store_true", help="list refused layouts with the reason")
    p.add_argument("--json", help="write every layout's prediction to this file")
    p.add_argument("--list-profiles", action="store_true")
    return p


def _gpt_config(args):
    """GPT dims and batch: train defaults < --config < flags."""
    from .train.config import TrainConfig, _read_yaml

    vals = {f: getattr(TrainConfig, f) for f in _GPT_FLAGS}
    vals.update({"data": None, "max_corpus_bytes": None})
    if args.config:
        y = _read_yaml(args.config)
        vals.update({k: v for k, v in y.items() if k in vals})
    for f in _GPT_FLAGS:
        v = getattr(args, f)
        if v is not None:
            vals[f] = v
    return vals


def _calibrate(argv) -> int:
    p = argparse.ArgumentParser(prog="shardflow plan calibrate",
                                description="measure this machine into a planner profile (docs/PLANNER.md)")
    p.add_argument("--ranks", default="1,2,4", help="rank counts to measure (default 1,2,4)")
    p.add_argument("--out", default="planner-profile.json")
    p.add_argument("--quick", action="store_true", help="a smaller grid (a rough profile, for tests)")
    p.add_argument("--name", default=None)
    args = p.parse_args(argv)
    from shardflow.distributed.planner.calibrate import calibrate

    doc = calibrate([int(r) for r in args.ranks.split(",")], quick=args.quick, out=args.out, name=args.name)
    print(f"wrote {args.out}: {doc['name']} (load average {doc['load_average'][0]} before, "
          f"{doc['load_average'][1]} after; a busy machine gives a profile of a busy machine)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "calibrate":
        return _calibrate(argv[1:])
    if argv and argv[0] == "published":
        from .plan_published import main as published

        return published(argv[1:])
    args = _parser().parse_args(argv)
    from shardflow.distributed.planner import builtin_profiles, report
    from shardflow.distributed.planner.auto import lm_spec, resolve_profile
    from shardflow.distributed.planner.search import explain, plan

    if args.list_profiles:
        for n in builtin_profiles():
            print(n)
        return 0
    if not args.ranks or args.ranks < 1:
        print("shardflow plan: --ranks N is required (the world size to plan for)", file=sys.stderr)
        return 2
    try:
        prof = resolve_profile(args.profile)
    except (FileNotFoundError, ValueError) as e:
        print(f"shardflow plan: {e}", file=sys.stderr)
        return 2
    vals = _gpt_config(args)
    vocab = args.vocab_size
    if vocab is None:
        import shardflow.data as sfdata

        vocab = sfdata.TextCorpus(vals["data"], block_size=vals["block_size"],
                                  max_bytes=vals["max_corpus_bytes"]).vocab_size
    import shardflow as sf
    from shardflow.distributed.planner import ModelShape, RunSpec
    from shardflow.models import GPT, GPTConfig

    from .plan_published import gpt_trace

    dims = dict(block_size=vals["block_size"], n_embd=vals["n_embd"], n_head=vals["n_head"],
                vocab_size=vocab, n_layer=vals["n_layer"])
    mt = gpt_trace(dropout=vals["dropout"])  # tiny traces, extrapolated: no big model is built
    n_params = mt.at(batch=1, **dims).n_params()
    mem = args.mem_per_rank * 2**30 if args.mem_per_rank else (
        prof.data["device"].get("memory_gib", 0) * 2**30 if prof.simulated else None)
    precision = args.precision or ("mixed" if prof.simulated else "fp32")
    sf.manual_seed(0)
    tiny = GPT(GPTConfig(block_size=8, vocab_size=32, n_layer=1, n_head=2, n_embd=16))
    if n_params <= LIVE_TRACE_PARAMS and not prof.simulated:  # small: trace the model itself
        model = GPT(GPTConfig(dropout=vals["dropout"], **dims))
        spec = lm_spec(model, vals["batch_size"], entry=args.entry, mem_per_rank=mem or None)
        spec.precision = precision
    else:
        spec = RunSpec(mt, vals["batch_size"], vals["block_size"], precision, "adamw",
                       tiny.tensor_parallel_plan(), args.entry, mem or None, extra_dims=dims)
    shape = ModelShape(vals["n_layer"], vals["n_head"])
    options = {}
    if args.entry == "any":
        options = dict(recompute=(False, True), schedules=("1f1b", "interleaved"))
    try:
        res = plan(spec, args.ranks, prof, shape, **options)
    except ValueError as e:
        print(f"shardflow plan: {e}", file=sys.stderr)
        return 2
    print(f"GPT {vals['n_layer']}L d{vals['n_embd']} h{vals['n_head']} T{vals['block_size']} V{vocab} "
          f"({n_params:,} parameters), global batch {vals['batch_size']}, {args.ranks} rank(s), "
          f"{spec.precision}, entry {args.entry}\nprofile: {prof.label()}\n")
    print(report.table(res, top=args.top))
    print("\n" + explain(res))
    w = res.winner
    if w is not None and args.entry == "train":
        print(f"run it: shardflow run -n {args.ranks} shardflow train gpt {w.layout.flags()}".rstrip())
    for e in res.estimates[:max(0, args.show)]:
        print("\n" + report.breakdown(e))
    if args.refused and res.refused:
        print("\nrefused layouts:\n" + report.refusals(res, limit=40))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"profile": prof.name, "simulated": prof.simulated, "ranks": args.ranks,
                       "rows": [_row(e) for e in res.estimates],
                       "refused": [{"layout": L.describe(), "reason": r} for L, r in res.refused]}, f, indent=1)
    return 0


def _row(e) -> dict:
    L = e.layout
    return {"layout": L.describe(), "dp": L.dp, "tp": L.tp, "pp": L.pp, "zero": L.zero,
            "microbatches": L.microbatches, "recompute": L.recompute, "schedule": L.schedule,
            "grad_sync": L.grad_sync, "step_time": e.step_time, "tokens_per_s": e.tokens_per_s,
            "memory": e.memory, "comm_bytes": e.comm_bytes, "comm_share": e.comm_share,
            "bubble": e.bubble, "mfu": e.mfu, "fits": e.fits}
