"""The suite's outputs: derived figures, ``suite.md`` (DLPerf-style table + environment),
``suite.json`` and the PNG plots (throughput and scaling curves).

Derived per row: ``throughput`` = ranks x batch / step (samples/s), ``tokens_per_s`` =
throughput x tokens per sample, ``speedup`` = throughput / the same model's and
framework's 1-rank throughput, ``efficiency`` = speedup / ranks, ``vs_torch`` = shardflow
throughput / PyTorch throughput at the same rank count, ``mfu`` = FLOPs per sample x
throughput / ranks / the measured per-rank GEMM rate.
"""

from __future__ import annotations

import json
import os
import statistics


def derive(configs: list[dict]) -> list[dict]:
    rows = [dict(r) for c in configs for r in c.get("rows", [])]
    peaks = [p for c in configs for p in c.get("gemm_gflops_per_rank", [])]
    peak = statistics.median(peaks) * 1e9 if peaks else None
    for r in rows:
        ok = r["error"] is None and r["step_s"]
        r["throughput"] = r["ranks"] * r["batch_per_rank"] / r["step_s"] if ok else None
        r["tokens_per_s"] = (r["throughput"] * r["tokens_per_sample"]
                             if ok and r["tokens_per_sample"] else None)
        r["mfu"] = (r["flops_per_sample"] * r["throughput"] / r["ranks"] / peak
                    if ok and peak and r["flops_per_sample"] else None)
    base = {(r["model"], r["framework"]): r["throughput"] for r in rows if r["ranks"] == 1}
    torch_tp = {(r["model"], r["ranks"]): r["throughput"] for r in rows
                if r["framework"] == "torch"}
    for r in rows:
        b = base.get((r["model"], r["framework"]))
        r["speedup"] = r["throughput"] / b if r["throughput"] and b else None
        r["efficiency"] = r["speedup"] / r["ranks"] if r["speedup"] else None
        t = torch_tp.get((r["model"], r["ranks"]))
        r["vs_torch"] = (r["throughput"] / t if r["framework"] == "shardflow" and r["throughput"]
                         and t else None)
    rows.sort(key=lambda r: (r["model"], r["framework"] != "shardflow", r["ranks"]))
    return rows


def _f(v, fmt, missing="-"):
    return missing if v is None else format(v, fmt)


def markdown(rows: list[dict], configs: list[dict], args, seconds: float) -> str:
    env = next((c["environment"] for c in configs if "environment" in c), {})
    cfg = next((c for c in configs if "steps" in c), {})
    peaks = [p for c in configs for p in c.get("gemm_gflops_per_rank", [])]
    lines = [f"## shardflow bench suite{' --quick' if args.quick else ''}: data-parallel "
             "training, CPU float32, 1 BLAS thread per rank", "",
             f"Median of {cfg.get('steps', '?')} timed steps (slowest rank per step) after "
             f"{cfg.get('warmup', '?')} warm-up steps; fixed batch per rank. "
             "MFU = achieved FLOP/s per rank / measured single-thread GEMM rate "
             f"({statistics.median(peaks) if peaks else float('nan'):.1f} GFLOP/s). "
             "Memory: peak NumPy bytes in one step (shardflow only).", "",
             "| model | batch/rank | framework | ranks | samples/s | tokens/s | speedup | "
             "scaling eff. | vs torch | step ms | memory MiB | MFU |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        err = r["error"]
        cell = ("OOM" if err == "OOM" else "ERR") if err else None
        lines.append(
            f"| {r['title']} | {r['batch_per_rank']} | {r['framework']} | {r['ranks']} | "
            f"{cell or _f(r['throughput'], '.1f')} | {cell or _f(r['tokens_per_s'], '.0f')} | "
            f"{cell or _f(r['speedup'], '.2f')} | {cell or _f(r['efficiency'], '.0%')} | "
            f"{_f(r['vs_torch'], '.2f')} | {cell or _f(r['step_s'] and r['step_s'] * 1e3, '.1f')} | "
            f"{_f(r['memory_bytes'] and r['memory_bytes'] / 2**20, '.1f')} | "
            f"{cell or _f(r['mfu'], '.1%')} |")
    errors = [f"- {r['title']} {r['framework']} x{r['ranks']}: {r['error']}" for r in rows
              if r["error"]]
    failed = [f"- {c['ranks']} rank(s): {c['error']}" for c in configs if "error" in c]
    if errors or failed:
        lines += ["", "Failures:", *errors, *failed]
    lines += ["", "Environment:", "", "```"]
    lines += [f"{k:<17}{v}" for k, v in env.items()]
    lines += [f"{'suite seconds':<17}{seconds:.0f}", f"{'load average':<17}{_loadavg()}", "```", ""]
    return "\n".join(lines)


def _loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def plots(rows: list[dict], out: str) -> list[str]:
    """throughput.png (samples/s vs ranks) and scaling.png (efficiency vs ranks)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []  # matplotlib is a base dependency; a broken install only loses the plots
    models = list(dict.fromkeys(r["model"] for r in rows))
    paths = []
    for name, key, ylabel in (("throughput.png", "throughput", "samples/s"),
                              ("scaling.png", "efficiency", "scaling efficiency")):
        fig, axes = plt.subplots(1, len(models), figsize=(3.2 * len(models), 3.0), squeeze=False)
        for ax, m in zip(axes[0], models):
            for fw, style in (("shardflow", "o-"), ("torch", "s--")):
                pts = [(r["ranks"], r[key]) for r in rows if r["model"] == m
                       and r["framework"] == fw and r[key] is not None]
                if pts:
                    ax.plot(*zip(*pts), style, label=fw)
            ranks = sorted({r["ranks"] for r in rows})
            if key == "efficiency":
                ax.plot(ranks, [1.0] * len(ranks), ":", color="gray", label="ideal")
                top = max([r[key] for r in rows if r["model"] == m and r[key]] + [1.0])
                ax.set_ylim(0, max(1.2, 1.1 * top))
            ax.set_title(next(r["title"] for r in rows if r["model"] == m), fontsize=8)
            ax.set_xlabel("ranks")
            ax.set_xticks(ranks)
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def write_outputs(configs: list[dict], args, seconds: float) -> dict[str, str]:
    os.makedirs(args.out, exist_ok=True)
    rows = derive(configs)
    md = os.path.join(args.out, "suite.md")
    with open(md, "w") as f:
        f.write(markdown(rows, configs, args, seconds))
    js = os.path.join(args.out, "suite.json")
    with open(js, "w") as f:
        json.dump({"rows": rows, "configs": [{k: v for k, v in c.items() if k != "rows"}
                                             for c in configs], "seconds": seconds,
                   "quick": bool(args.quick)}, f, indent=1)
    out = {"md": md, "json": js}
    for p in plots(rows, args.out):
        out[os.path.basename(p).split(".")[0]] = p
    return out
