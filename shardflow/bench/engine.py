"""``shardflow bench engine``: training steps of three reference workloads on CPU float32,
shardflow vs PyTorch eager, measured in the same process, same weights, same data.

Method: build each workload with both libraries (``bench/workloads.py``), copy PyTorch's
initial weights into the shardflow model, warm up, then time ``runs`` (default 5) runs of
``steps`` forward+backward+update steps, alternating the two libraries run by run so that
machine noise hits both alike. Report the median ms/step, achieved GFLOP/s (analytic
FLOPs) and the ratio shardflow/PyTorch (lower is better; 1.0 = as fast as PyTorch).

The small-op line measures per-op overhead: a chain of elementwise multiplies on 16-element
tensors that require grad, forward and forward+backward, in microseconds per op.

``--device cuda`` runs both libraries on the GPU (shardflow through CuPy, PyTorch CUDA
eager; ``--compile`` adds a torch.compile column), synchronising the device around every
timed run, and adds the larger ``gpt-l`` workload; it reports achieved TFLOP/s, MFU against
``--peak-tflops`` (float32, without tensor cores: 67 on an H100/H200 SXM) and peak device
memory of each library. Not yet run on a GPU (the GPU issue): without one it exits with a
message that says so.

``--numpy-path`` (CPU) adds a column for shardflow with its fused Numba kernels switched off
(``SHARDFLOW_KERNELS=numpy`` around each of its steps), alternated with the other columns in
the same runs, so the kernels' gain is measured under the same load. The kernels' compile
(or disk-cache load) time, paid in the warm-up, is printed after the table
(``shardflow.kernels.compile_report()``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from .workloads import WORKLOADS


def _import_torch():
    try:
        import torch
    except ImportError:
        raise SystemExit(
            "the engine benchmark compares against PyTorch: install it with "
            "`pip install torch==2.13.0` (CPU build) or `pip install -e '.[test]'`"
        ) from None
    return torch


def _copy_weights(th_model, sf_model, sf):
    state = {k: sf.tensor(v.detach().numpy()) for k, v in th_model.state_dict().items()}
    sf_model.load_state_dict(state)


def _step_fn(lib, wl, model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        loss = wl.loss(lib, model, x, y)
        loss.backward()
        opt.step()
        return loss

    return step


def _with_kernels(mode, step):
    """``step`` run with SHARDFLOW_KERNELS=mode (restored after each step)."""

    def run():
        old = os.environ.get("SHARDFLOW_KERNELS")
        os.environ["SHARDFLOW_KERNELS"] = mode
        try:
            return step()
        finally:
            if old is None:
                del os.environ["SHARDFLOW_KERNELS"]
            else:
                os.environ["SHARDFLOW_KERNELS"] = old

    return run


def _time_run(step, steps, sync=None):
    if sync is not None:
        sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if sync is not None:
        sync()  # the GPU runs asynchronously: count the work, not its launch
    return (time.perf_counter() - t0) / steps


def check_cuda(torch) -> None:
    """Exit with a message unless both libraries see a CUDA device."""
    import shardflow as sf

    missing = [name for name, ok in (("shardflow (CuPy)", sf.cuda.is_available()),
                                     ("PyTorch", torch.cuda.is_available())) if not ok]
    if missing:
        raise SystemExit(
            f"--device cuda: {' and '.join(missing)} see(s) no CUDA device on this machine. "
            "Run it on a machine with an NVIDIA GPU, CuPy (`pip install 'shardflow[gpu]'`) and a "
            "CUDA build of PyTorch, or drop --device for the CPU benchmark."
        )


def bench_workload(key, runs=5, steps=None, warmup=2, seed=0, device="cpu", compile=False,
                   numpy_path=False):
    import shardflow as sf

    torch = _import_torch()
    wl = WORKLOADS[key]
    steps = steps or {"mlp": 5, "cnn": 3, "gpt": 2}.get(key, 2)
    torch.manual_seed(seed)
    th_model = wl.build(torch)
    sf_model = wl.build(sf)
    _copy_weights(th_model, sf_model, sf)
    x, y = wl.make_batch(np.random.default_rng(seed))
    th_x, th_y, sf_x, sf_y = torch.from_numpy(x), torch.from_numpy(y), sf.from_numpy(x), sf.from_numpy(y)
    th_sync = sf_sync = None
    if device == "cuda":
        th_model, sf_model = th_model.to("cuda"), sf_model.to("cuda")
        th_x, th_y, sf_x, sf_y = th_x.to("cuda"), th_y.to("cuda"), sf_x.to("cuda"), sf_y.to("cuda")
        th_sync, sf_sync = torch.cuda.synchronize, sf.cuda.synchronize
    th_step = _step_fn(torch, wl, th_model, wl.make_optimizer(torch, th_model), th_x, th_y)
    sf_step = _step_fn(sf, wl, sf_model, wl.make_optimizer(sf, sf_model), sf_x, sf_y)
    variants = {"shardflow": (sf_step, sf_sync), "torch": (th_step, th_sync)}
    if numpy_path and device == "cpu":  # same model and optimizer, kernels switched off
        variants["shardflow (numpy)"] = (_with_kernels("numpy", sf_step), None)
    if compile:
        compiled = torch.compile(th_model)
        variants["torch.compile"] = (_step_fn(torch, wl, compiled, wl.make_optimizer(torch, th_model),
                                              th_x, th_y), th_sync)
    for _ in range(warmup):
        for step, sync in variants.values():
            step()
            if sync is not None:
                sync()
    times = {name: [] for name in variants}
    for _ in range(runs):  # alternate the libraries run by run: noise hits all alike
        for name, (step, sync) in variants.items():
            times[name].append(_time_run(step, steps, sync))
    ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    sf_ms, th_ms = ms["shardflow"], ms["torch"]
    row = {
        "workload": key, "name": wl.name, "device": device, "shardflow_ms": sf_ms, "torch_ms": th_ms,
        "ratio": sf_ms / th_ms, "shardflow_gflops": wl.flops_per_step / sf_ms / 1e6,
        "torch_gflops": wl.flops_per_step / th_ms / 1e6, "runs": runs, "steps_per_run": steps,
    }
    if compile:
        row["torch_compile_ms"] = ms["torch.compile"]
    if "shardflow (numpy)" in ms:
        row["shardflow_numpy_ms"] = ms["shardflow (numpy)"]
    if device == "cuda":
        row["shardflow_peak_bytes"] = int(sf.cuda.max_memory_allocated())
        row["torch_peak_bytes"] = int(torch.cuda.max_memory_allocated())
    return row


def bench_small_op(n=2000, runs=5):
    """Per-op overhead through the autograd engine, shardflow vs PyTorch (µs per op)."""
    import shardflow as sf

    torch = _import_torch()
    v = np.random.default_rng(0).standard_normal(16).astype(np.float32)

    def chain(lib, a, b, backward):
        t0 = time.perf_counter()
        y = a
        for _ in range(n):
            y = y * b
        if backward:
            y.sum().backward()
        return (time.perf_counter() - t0) / n * 1e6

    out = {}
    for backward in (False, True):
        sf_t, th_t = [], []
        for _ in range(runs):
            a, b = sf.tensor(v, requires_grad=True), sf.tensor(v * 0 + 1.0001, requires_grad=True)
            sf_t.append(chain(sf, a, b, backward))
            ta, tb = torch.tensor(v, requires_grad=True), torch.tensor(v * 0 + 1.0001, requires_grad=True)
            th_t.append(chain(torch, ta, tb, backward))
        key = "fwd+bwd" if backward else "fwd"
        out[key] = (statistics.median(sf_t), statistics.median(th_t))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="shardflow bench engine", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="mlp,cnn,gpt", help="comma list of: " + ",".join(WORKLOADS))
    p.add_argument("--runs", type=int, default=5, help="timed runs per library (median reported)")
    p.add_argument("--steps", type=int, default=None, help="steps per run (default per model)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: both libraries on the GPU (adds the gpt-l workload by default)")
    p.add_argument("--compile", action="store_true", help="add a torch.compile column")
    p.add_argument("--numpy-path", action="store_true",
                   help="add a column: shardflow with its fused kernels off (SHARDFLOW_KERNELS=numpy)")
    p.add_argument("--peak-tflops", type=float, default=67.0,
                   help="device float32 peak for the MFU column with --device cuda (H100 SXM: 67)")
    args = p.parse_args(argv)
    torch = _import_torch()
    if args.device == "cuda":
        check_cuda(torch)
        if args.models == "mlp,cnn,gpt":
            args.models += ",gpt-l"
    torch.set_num_threads(max(1, torch.get_num_threads()))
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    for k in keys:
        if k not in WORKLOADS:
            p.error(f"unknown model {k!r}; expected some of {','.join(WORKLOADS)}")
    rows = []
    print(f"engine benchmark: {args.device.upper()} float32, median of {args.runs} runs, torch "
          f"{torch.__version__}, {torch.get_num_threads()} torch threads")
    hdr = f"{'workload':<44} {'shardflow ms':>12} {'torch ms':>9} {'ratio':>6} {'sf GFLOP/s':>10} {'th GFLOP/s':>10}"
    if args.compile:
        hdr += f" {'compile ms':>10}"
    numpy_col = args.numpy_path and args.device == "cpu"
    if numpy_col:
        hdr += f" {'sf numpy ms':>11} {'kernel gain':>11}"
    if args.device == "cuda":
        hdr += f" {'sf MFU':>7} {'th MFU':>7} {'sf MiB':>7} {'th MiB':>7}"
    print(hdr)
    print("-" * len(hdr))
    for k in keys:
        r = bench_workload(k, runs=args.runs, steps=args.steps, warmup=args.warmup, device=args.device,
                           compile=args.compile, numpy_path=numpy_col)
        rows.append(r)
        line = (f"{r['name']:<44} {r['shardflow_ms']:>12.1f} {r['torch_ms']:>9.1f} {r['ratio']:>6.2f} "
                f"{r['shardflow_gflops']:>10.1f} {r['torch_gflops']:>10.1f}")
        if args.compile:
            line += f" {r['torch_compile_ms']:>10.1f}"
        if numpy_col:
            line += f" {r['shardflow_numpy_ms']:>11.1f} {r['shardflow_numpy_ms'] / r['shardflow_ms']:>10.2f}x"
        if args.device == "cuda":
            peak = args.peak_tflops * 1e3
            line += (f" {r['shardflow_gflops'] / peak:>7.1%} {r['torch_gflops'] / peak:>7.1%} "
                     f"{r['shardflow_peak_bytes'] / 2**20:>7.0f} {r['torch_peak_bytes'] / 2**20:>7.0f}")
        print(line, flush=True)
    if args.device == "cuda":
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"workloads": rows}, f, indent=2)
        return 0
    from shardflow import kernels

    report = kernels.format_compile_report()
    if report:
        print(report)
    ops = bench_small_op(runs=args.runs)
    print()
    print(f"{'small op (16 elems, requires_grad)':<44} {'shardflow us':>12} {'torch us':>9} {'ratio':>6}")
    for key, (s, t) in ops.items():
        print(f"{'  x = x * w, ' + key + ' per op':<44} {s:>12.2f} {t:>9.2f} {s / t:>6.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workloads": rows, "small_op_us": ops}, f, indent=2)
    return 0
