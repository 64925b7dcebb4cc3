"""The first training step of a fresh process: wall time, and what numba did in it.

    python scripts/first_step.py --models mlp,cnn,gpt          # one process, workloads in order
    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/first_step.py   # cold: nothing compiled yet

Prints per workload: the time to import shardflow, the first step's wall time, the second
step's (steady), and the kernel specialisations compiled or loaded from numba's disk cache
while the model was built and in the first step (``shardflow.kernels.compile_report()``). For goal 4 of issue 24
(first step <= 2 s when the kernels were compiled before; the cold first run <= 10 s in all).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="mlp,cnn,gpt")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    import numpy as np

    import shardflow as sf
    from shardflow import kernels
    from shardflow.bench.workloads import WORKLOADS
    print(f"import shardflow {time.perf_counter() - t0:.2f} s")
    total = time.perf_counter() - t0
    for key in args.models.split(","):
        w = WORKLOADS[key]
        n0 = len(kernels.compile_report())  # from here: the build's draws compile kernels too
        t = time.perf_counter()
        sf.manual_seed(0)
        model = w.build(sf)
        opt = w.make_optimizer(sf, model)
        x, y = w.make_batch(np.random.default_rng(0))
        x, y = sf.tensor(x), sf.tensor(y)
        build = time.perf_counter() - t
        total += build
        times = []
        for _ in range(2):
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = w.loss(sf, model, x, y)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t)
        total += times[0]
        rep = kernels.compile_report()[n0:]
        comp = [r for r in rep if r["source"] == "compiled"]
        load = [r for r in rep if r["source"] != "compiled"]
        print(f"{key}: build {build:.2f} s, first step {times[0]:.2f} s, second {times[1] * 1e3:.0f} ms; "
              f"{len(comp)} compiled ({sum(r['seconds'] for r in comp):.1f} s), "
              f"{len(load)} loaded ({sum(r['seconds'] for r in load):.2f} s)")
        for r in rep:
            print(f"    {r['kernel']:<28} {r['dtype']:<8} ndim {r['ndim']}  {r['seconds']:.2f} s  {r['source']}")
    print(f"total (import + builds + first steps) {total:.1f} s")


if __name__ == "__main__":
    main()
