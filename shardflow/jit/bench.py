"""Compiled training step vs eager step on the engine benchmark's workloads (MLP, CNN,
GPT-mini of ``bench/workloads.py``), for ``shardflow bench engine``'s compile column and
the figure in docs/KERNELS.md.

``bench_compiled_step(wl, lib)`` (``wl`` a ``bench.workloads.Workload``, ``lib`` the
``shardflow`` module: this layer imports neither, the caller passes them) builds two copies of the workload's shardflow model with the same
weights, each with its own optimizer: one trained by the eager step (``zero_grad``, forward,
``backward``, ``step``), one by ``compile_step``. It reports

* ``compile_s``: the first compiled call (trace + the eager step it runs + the plan's check
  replay), and ``eager_first_ms`` the first eager step of the other copy (both pay the
  kernels' first-use cost once per process; whichever runs first pays numba's import);
* ``first_replay_ms``: the first replay of the plan (its first-step cost);
* ``eager_ms`` / ``compiled_ms``: medians over ``runs`` alternating runs of ``steps`` steps
  each, after ``warmup`` steps, in milliseconds per step, and their ratio;
  ``eager_cpu_ms`` / ``compiled_cpu_ms`` / ``cpu_ratio``: the same with this process's CPU
  time (all its threads), which other processes on a shared machine disturb much less than
  wall time.

The batch is fixed (one ``make_batch``), so both sides run the same arithmetic each step.
"""

from __future__ import annotations

import statistics
import time


def _models(sf, wl, seed):
    import numpy as np

    a = wl.build(sf)
    b = wl.build(sf)
    b.load_state_dict({k: sf.tensor(np.array(v.detach().numpy(), copy=True))
                       for k, v in a.state_dict().items()})
    x, y = (sf.from_numpy(t) for t in wl.make_batch(np.random.default_rng(seed)))
    return a, b, x, y


def bench_compiled_step(wl, lib, *, runs: int = 7, steps: int | None = None, warmup: int = 2,
                        seed: int = 0) -> dict:
    """Time the compiled vs eager training step of workload ``wl`` built with ``lib``
    (``shardflow``), e.g. ``bench_compiled_step(WORKLOADS["mlp"], shardflow)``.

    Returns ``{"workload", "eager_ms", "compiled_ms", "ratio" (compiled / eager),
    "eager_cpu_ms", "compiled_cpu_ms", "cpu_ratio",
    "compile_s", "eager_first_ms", "first_replay_ms", "runs", "steps", "eager_runs_ms",
    "compiled_runs_ms", "plan", "compiled_phase_ms"}`` (``plan``: the compile log's first line,
    or the eager fallback's reason; ``compiled_phase_ms``: mean wall ms per replayed step in
    forward, backward and the optimizer). ``steps`` defaults to 5 (2 for GPT workloads)."""
    from .step import compile_step

    sf = lib
    steps = steps or (2 if wl.name.startswith("GPT") else 5)
    m_eager, m_comp, x, y = _models(sf, wl, seed)
    opt_e, opt_c = wl.make_optimizer(sf, m_eager), wl.make_optimizer(sf, m_comp)
    compiled = compile_step(m_comp, opt_c, lambda m, a, b: wl.loss(sf, m, a, b))
    eager = compile_step(m_eager, opt_e, lambda m, a, b: wl.loss(sf, m, a, b)).eager_step

    t0 = time.perf_counter()
    eager(x, y)
    eager_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled(x, y)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled(x, y)
    first_replay = time.perf_counter() - t0
    for _ in range(warmup):
        eager(x, y)
        compiled(x, y)

    def timed(fn, wall, cpu):
        t, p = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn(x, y)
        wall.append((time.perf_counter() - t) / steps * 1e3)
        cpu.append((time.process_time() - p) / steps * 1e3)

    e_ms, c_ms, e_cpu, c_cpu = [], [], [], []
    for r in range(runs):  # alternating (and which goes first), so both see the same load
        if r % 2:
            timed(compiled, c_ms, c_cpu)
            timed(eager, e_ms, e_cpu)
        else:
            timed(eager, e_ms, e_cpu)
            timed(compiled, c_ms, c_cpu)
    plan = next((en.plan for en in compiled.cache.values() if en.plan is not None), None)
    phases = {}
    if plan is not None and compiled.stats["replays"]:
        phases = {k: v / compiled.stats["replays"] * 1e3 for k, v in plan.phase_s.items()}
    e, c = statistics.median(e_ms), statistics.median(c_ms)
    ec, cc = statistics.median(e_cpu), statistics.median(c_cpu)
    return {"workload": wl.name, "eager_ms": e, "compiled_ms": c, "ratio": c / e,
            "eager_cpu_ms": ec, "compiled_cpu_ms": cc, "cpu_ratio": cc / ec,
            "compile_s": compile_s, "eager_first_ms": eager_first * 1e3,
            "first_replay_ms": first_replay * 1e3, "runs": runs, "steps": steps,
            "eager_runs_ms": e_ms, "compiled_runs_ms": c_ms,
            "plan": compiled.explain().splitlines()[0] if compiled.log else "",
            "replays": compiled.stats["replays"], "compiled_phase_ms": phases}


def format_table(results: list[dict]) -> str:
    """The rows of ``bench_compiled_step`` results as a Markdown table."""
    lines = ["| workload | eager ms | compiled ms | compiled / eager | eager CPU ms | "
             "compiled CPU ms | CPU ratio | compile s | eager 1st step ms | 1st replay ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['workload']} | {r['eager_ms']:.1f} | {r['compiled_ms']:.1f} | "
                     f"{r['ratio']:.2f} | {r['eager_cpu_ms']:.1f} | {r['compiled_cpu_ms']:.1f} | "
                     f"{r['cpu_ratio']:.2f} | {r['compile_s']:.2f} | {r['eager_first_ms']:.1f} | "
                     f"{r['first_replay_ms']:.1f} |")
    return "\n".join(lines)
