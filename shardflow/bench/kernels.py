"""``shardflow bench kernels``: the fused Numba kernels against the NumPy path they replace
and against PyTorch eager, op by op (forward + backward), then ``shardflow.compile`` on the
reference workloads' inference forward.

Method: each op runs on a GPT-mini-sized input (rows = batch 16 x 128 tokens). Per run, each
variant does ``reps`` forward+backward calls; the variants alternate run by run (``runs``,
default 7; the median is reported) so machine noise hits all alike. Variants: ``numpy``
(``SHARDFLOW_KERNELS=numpy``), ``numba`` (the kernels, all threads), ``numba 1t`` (one
thread: how much of the gain is fusion, how much is the second core) and ``torch``. The
optimizer rows time one ``step()`` over GPT-mini's parameter count.

The compile part times the eval forward under ``no_grad`` of MLP / CNN / GPT-mini: eager,
``shardflow.compile``d (after its first, tracing call), and PyTorch eager, with the trace
time and what was fused. The kernels' compile report closes the output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

ROWS = 16 * 128


def _cases():
    # name -> (fn(lib, F, x), input shape)
    return {
        "layer_norm (2048, 256)": (lambda lib, F, x: F.layer_norm(x, (256,)), (ROWS, 256)),
        "softmax (2048, 256)": (lambda lib, F, x: F.softmax(x, dim=-1), (ROWS, 256)),
        "log_softmax (2048, 256)": (lambda lib, F, x: F.log_softmax(x, dim=-1), (ROWS, 256)),
        "cross_entropy (2048, 256)": (lambda lib, F, x: F.cross_entropy(
            x, lib.from_numpy(np.arange(ROWS, dtype=np.int64) % 256)), (ROWS, 256)),
        "gelu tanh (2048, 1024)": (lambda lib, F, x: F.gelu(x, approximate="tanh"), (ROWS, 1024)),
        "gelu erf (2048, 1024)": (lambda lib, F, x: F.gelu(x), (ROWS, 1024)),
        "sdpa causal (16, 4, 128, 64)": (lambda lib, F, x: F.scaled_dot_product_attention(
            x, x * 0.5, x, is_causal=True), (16, 4, 128, 64)),
    }


class _Mode:
    """Run a callable with SHARDFLOW_KERNELS / the kernel thread count set (restored after)."""

    def __init__(self, mode, threads=None):
        self.mode, self.threads = mode, threads

    def __enter__(self):
        self.old = os.environ.get("SHARDFLOW_KERNELS")
        os.environ["SHARDFLOW_KERNELS"] = self.mode
        if self.threads is not None:
            import numba

            self.old_threads = numba.get_num_threads()
            numba.set_num_threads(self.threads)

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("SHARDFLOW_KERNELS", None)
        else:
            os.environ["SHARDFLOW_KERNELS"] = self.old
        if self.threads is not None:
            import numba

            numba.set_num_threads(self.old_threads)


def _timed(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def _op_rows(runs, reps):
    import torch

    import shardflow as sf
    import shardflow.nn.functional as sfF

    rows = []
    for name, (fn, shape) in _cases().items():
        x0 = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xs = sf.tensor(x0, requires_grad=True)
        xt = torch.tensor(x0, requires_grad=True)

        def sf_step(fn=fn, xs=xs):
            y = fn(sf, sfF, xs)
            (y.sum() if y.ndim else y).backward()
            xs.grad = None

        def th_step(fn=fn, xt=xt):
            y = fn(torch, torch.nn.functional, xt)
            (y.sum() if y.ndim else y).backward()
            xt.grad = None

        rows.append(_measure(name, sf_step, th_step, runs, reps))
    # optimizers over GPT-mini's parameter count (about 3.3M)
    for oname, make_sf, make_th in [
        ("AdamW step (3.3M params)", lambda p: sf.optim.AdamW(p, lr=1e-3),
         lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True)),
        ("SGD momentum step (3.3M params)", lambda p: sf.optim.SGD(p, lr=0.1, momentum=0.9),
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True)),
    ]:
        shapes = [(256, 256)] * 24 + [(256, 1024)] * 8
        rng = np.random.default_rng(1)
        ps = [sf.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]
        pt = [torch.tensor(p.numpy(), requires_grad=True) for p in ps]
        for a, b in zip(ps, pt):
            g = rng.standard_normal(a.shape).astype(np.float32)
            a.grad, b.grad = sf.tensor(g), torch.tensor(g)
        os_, ot = make_sf(ps), make_th(pt)
        rows.append(_measure(oname, os_.step, ot.step, runs, reps))
    return rows


def _measure(name, sf_step, th_step, runs, reps):
    variants = {
        "numpy": lambda: _run_in(_Mode("numpy"), sf_step, reps),
        "numba": lambda: _run_in(_Mode("numba"), sf_step, reps),
        "numba 1t": lambda: _run_in(_Mode("numba", threads=1), sf_step, reps),
        "torch": lambda: _timed(th_step, reps),
    }
    for v in variants.values():  # warm-up (compiles the kernels)
        v()
    times = {k: [] for k in variants}
    for _ in range(runs):
        for k, v in variants.items():
            times[k].append(v())
    return {"op": name, **{k: statistics.median(t) * 1e3 for k, t in times.items()}}


def _run_in(mode, step, reps):
    with mode:
        return _timed(step, reps)


def _compile_rows(runs):
    import torch

    import shardflow as sf
    from shardflow.bench.workloads import WORKLOADS

    out = []
    for key in ("mlp", "cnn", "gpt"):
        wl = WORKLOADS[key]
        torch.manual_seed(0)
        th = wl.build(torch).eval()
        m = wl.build(sf).eval()
        m.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in th.state_dict().items()})
        x = wl.make_batch(np.random.default_rng(0))[0]
        xs, xt = sf.from_numpy(x), torch.from_numpy(x)
        cm = sf.compile(m)
        with sf.no_grad():
            t0 = time.perf_counter()
            cm(xs)
            trace_s = time.perf_counter() - t0
        reps = {"mlp": 10, "cnn": 5, "gpt": 2}[key]

        def eager(m=m, xs=xs):
            with sf.no_grad():
                m(xs)

        def compiled(cm=cm, xs=xs):
            with sf.no_grad():
                cm(xs)

        def th_eager(th=th, xt=xt):
            with torch.no_grad():
                th(xt)

        variants = {"eager": eager, "compiled": compiled, "torch": th_eager}
        for v in variants.values():
            v()
        times = {k: [] for k in variants}
        for _ in range(runs):
            for k, v in variants.items():
                times[k].append(_timed(v, reps))
        g = next(iter(cm._compiled.cache.values())).graph
        fused = g.count("fused") if g is not None else 0
        out.append({"workload": wl.name, **{k: statistics.median(t) * 1e3 for k, t in times.items()},
                    "trace_s": trace_s, "fused_groups": fused})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="shardflow bench kernels", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="alternating runs per variant (median)")
    p.add_argument("--reps", type=int, default=5, help="calls per run")
    p.add_argument("--no-compile", action="store_true", help="skip the shardflow.compile part")
    args = p.parse_args(argv)
    try:
        import numba  # noqa: F401
        import torch
    except ImportError as e:
        raise SystemExit(f"bench kernels needs numba and torch ({e}); "
                         "`pip install -e '.[test]'`") from None
    from shardflow import kernels

    print(f"kernels benchmark: float32 forward+backward, median of {args.runs} runs x {args.reps} "
          f"calls, ms per call; numba threads {kernels.num_threads()}, torch threads "
          f"{torch.get_num_threads()}, load {os.getloadavg()[0]:.1f}")
    hdr = (f"{'op':<34} {'numpy':>8} {'numba':>8} {'numba 1t':>9} {'torch':>8} "
           f"{'numpy/numba':>11} {'numba/torch':>11}")
    print(hdr)
    print("-" * len(hdr))
    for r in _op_rows(args.runs, args.reps):
        print(f"{r['op']:<34} {r['numpy']:>8.2f} {r['numba']:>8.2f} {r['numba 1t']:>9.2f} "
              f"{r['torch']:>8.2f} {r['numpy'] / r['numba']:>10.2f}x {r['numba'] / r['torch']:>11.2f}",
              flush=True)
    if not args.no_compile:
        print()
        hdr = (f"{'inference forward (no_grad, eval)':<44} {'eager ms':>9} {'compiled':>9} "
               f"{'torch ms':>9} {'comp/eager':>10} {'trace s':>8} {'fused':>6}")
        print(hdr)
        print("-" * len(hdr))
        for r in _compile_rows(args.runs):
            print(f"{r['workload']:<44} {r['eager']:>9.2f} {r['compiled']:>9.2f} {r['torch']:>9.2f} "
                  f"{r['compiled'] / r['eager']:>10.2f} {r['trace_s']:>8.2f} {r['fused_groups']:>6}",
                  flush=True)
    report = kernels.format_compile_report()
    if report:
        print()
        print(report)
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0
