"""``shardflow bench engine``: training steps of three reference workloads on CPU float32,
shardflow vs PyTorch eager, measured in the same process, same weights, same data.

Method: build each workload with both libraries (``bench/workloads.py``), copy PyTorch's
initial weights into the shardflow model, warm up, then time ``runs`` (default 5) runs of
``steps`` forward+backward+update steps, alternating the libraries run by run so that
machine noise hits both alike. Report the median ms/step, achieved GFLOP/s (analytic
FLOPs) and the ratio shardflow/PyTorch (lower is better; 1.0 = as fast as PyTorch).

The small-op line measures per-op overhead: a chain of elementwise multiplies on 16-element
tensors that require grad, forward and forward+backward, in microseconds per op.

Peer columns (``--peers``, comma list; ``all`` for every one; PyTorch eager always runs, it is
the ratio's reference): ``torch-compile`` the same PyTorch step with forward+loss and the
optimizer step compiled by ``torch.compile`` (inductor; ``bench/engine_torch_compile.py``),
``jax`` the same model, init, batch and optimizer as one ``jax.jit`` train step
(``bench/engine_jax.py``; jax comes with the ``bench`` extra), ``sf-compile`` shardflow's
``shardflow.jit.compile_step`` (``bench/engine_shardflow_compile.py``). Every peer starts from
PyTorch's initial weights and trains its own copy; all columns alternate in the same runs. The
default is PyTorch eager only (no compile in the default run). A peer that cannot be built,
compiled or run shows ``failed`` in its cell and its reason under the tables; the other
columns still come out. ``sf/best`` is shardflow's time over the fastest other column.

Cold costs, separately from the steady medians: each column's warm-up steps are timed one
by one; the first is the *first step* (for a compiler: tracing + compiling + running once),
and the excess of all warm-up steps over the steady median is the *compile* column (torch's
compiled optimizer step is traced again on step 2, once its state exists). Same process: the
first workload also pays library initialisation, later ones find caches warm (inductor's
and numba's on-disk caches persist across runs too).

``--device cuda`` runs both libraries on the GPU (shardflow through CuPy, PyTorch CUDA
eager; ``--peers torch-compile``, or ``--compile``, adds a torch.compile column),
synchronising the device around every timed run, and adds the larger ``gpt-l`` workload;
it reports achieved TFLOP/s, MFU against ``--peak-tflops`` (float32, without tensor cores:
67 on an H100/H200 SXM) and peak device memory of each library. Without a GPU it exits with
a message that says so.

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

from . import engine_jax, engine_shardflow_compile, engine_torch_compile
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


PEERS = ("torch-compile", "jax", "sf-compile")  # --peers names; PyTorch eager always runs
PEER_LABELS = {"torch-compile": engine_torch_compile.NAME, "jax": engine_jax.NAME,
               "sf-compile": engine_shardflow_compile.NAME}


def parse_peers(text: str) -> tuple[str, ...]:
    """``--peers`` value -> peer names in PEERS order ('all' = every peer; 'torch' and 'none'
    name nothing extra: PyTorch eager is the reference and always runs)."""
    names = {n.strip() for n in text.split(",") if n.strip()} - {"torch", "none"}
    if "all" in names:
        names = (names - {"all"}) | set(PEERS)
    unknown = sorted(names - set(PEERS))
    if unknown:
        raise ValueError(f"--peers: unknown peer(s) {', '.join(unknown)}; expected a comma list "
                         f"of {', '.join(PEERS)}, torch (always on) or all")
    return tuple(p for p in PEERS if p in names)


def _peer_step(peer, *, torch, sf, wl, key, device, th_model, sf_model, th_xy, sf_xy, np_xy):
    """(step, sync) of one peer column, or raise with the reason it cannot run here."""
    if peer == "torch-compile":
        ok, why = engine_torch_compile.available(torch)
        if not ok:
            raise RuntimeError(why)
        sync = torch.cuda.synchronize if device == "cuda" else None
        return engine_torch_compile.make_step(torch, wl, th_model, *th_xy), sync
    if peer == "jax":
        ok, why = engine_jax.available()
        if not ok:
            raise RuntimeError(why)
        if device != "cpu":
            raise RuntimeError("the JAX column is CPU only (its step would run on jax's default "
                               "device, not the one --device names)")
        return engine_jax.make_step(key, th_model, *np_xy), None  # the step blocks on its result
    if peer == "sf-compile":
        ok, why = engine_shardflow_compile.available()
        if not ok:
            raise RuntimeError(why)
        if device != "cpu":
            raise RuntimeError("shardflow.jit.compile_step is CPU only")
        return engine_shardflow_compile.make_step(sf, wl, sf_model, *sf_xy), None
    raise ValueError(f"unknown peer {peer!r}")


def _reason(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:200] if text else type(e).__name__


def bench_workload(key, runs=5, steps=None, warmup=2, seed=0, device="cpu", compile=False,
                   numpy_path=False, peers=()):
    """One workload's row: every column's median ms/step over ``runs`` interleaved runs, each
    column's warm-up step times (the first is the cold first step; the excess of all of them
    over the median is the compile/first-use cost), and the reason of every peer that could
    not be built, compiled or run (that column is dropped, the others still come out).
    ``compile=True`` is the old spelling of ``peers=("torch-compile",)``."""
    import shardflow as sf

    torch = _import_torch()
    wl = WORKLOADS[key]
    steps = steps or {"mlp": 5, "cnn": 3, "gpt": 2}.get(key, 2)
    peers = tuple(peers) + (("torch-compile",) if compile and "torch-compile" not in peers else ())
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
    failed = {}
    variants = {}
    for peer in peers:  # built first, from the untouched initial weights
        try:
            variants[PEER_LABELS[peer]] = _peer_step(
                peer, torch=torch, sf=sf, wl=wl, key=key, device=device, th_model=th_model,
                sf_model=sf_model, th_xy=(th_x, th_y), sf_xy=(sf_x, sf_y), np_xy=(x, y))
        except Exception as e:  # a peer that cannot be built is reported, never fatal
            failed[PEER_LABELS[peer]] = f"cannot build: {_reason(e)}"
    th_step = _step_fn(torch, wl, th_model, wl.make_optimizer(torch, th_model), th_x, th_y)
    sf_step = _step_fn(sf, wl, sf_model, wl.make_optimizer(sf, sf_model), sf_x, sf_y)
    variants = {"shardflow": (sf_step, sf_sync), "torch": (th_step, th_sync), **variants}
    if numpy_path and device == "cpu":  # same model and optimizer, kernels switched off
        variants["shardflow (numpy)"] = (_with_kernels("numpy", sf_step), None)
    warm = {name: [] for name in variants}
    for _ in range(max(1, warmup)):
        for name, (step, sync) in list(variants.items()):
            try:
                warm[name].append(_time_run(step, 1, sync) * 1e3)
            except Exception as e:
                if name in ("shardflow", "torch"):
                    raise
                failed[name] = f"failed in warm-up step {len(warm[name]) + 1}: {_reason(e)}"
                del variants[name]
    times = {name: [] for name in variants}
    for _ in range(runs):  # alternate the libraries run by run: noise hits all alike
        for name, (step, sync) in list(variants.items()):
            try:
                times[name].append(_time_run(step, steps, sync))
            except Exception as e:
                if name in ("shardflow", "torch"):
                    raise
                failed[name] = f"failed in a timed run: {_reason(e)}"
                del variants[name], times[name]
    ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    sf_ms, th_ms = ms["shardflow"], ms["torch"]
    row = {
        "workload": key, "name": wl.name, "device": device, "shardflow_ms": sf_ms, "torch_ms": th_ms,
        "ratio": sf_ms / th_ms, "shardflow_gflops": wl.flops_per_step / sf_ms / 1e6,
        "torch_gflops": wl.flops_per_step / th_ms / 1e6, "runs": runs, "steps_per_run": steps,
        "ms": ms, "first_step_ms": {name: warm[name][0] for name in ms},
        "warmup_ms": {name: warm[name] for name in ms},
        "compile_s": {name: sum(max(0.0, w - ms[name]) for w in warm[name]) / 1e3 for name in ms},
        "failed": failed,
    }
    if engine_torch_compile.NAME in ms:
        row["torch_compile_ms"] = ms[engine_torch_compile.NAME]
    if "shardflow (numpy)" in ms:
        row["shardflow_numpy_ms"] = ms["shardflow (numpy)"]
    if device == "cuda":
        row["shardflow_peak_bytes"] = int(sf.cuda.max_memory_allocated())
        row["torch_peak_bytes"] = int(torch.cuda.max_memory_allocated())
    return row


def small_op_chain(a, b, n: int, backward: bool) -> float:
    """µs per op of ``y = y * b`` repeated ``n`` times from ``y = a`` (then
    ``y.sum().backward()`` when ``backward``), for either library's tensors."""
    t0 = time.perf_counter()
    y = a
    for _ in range(n):
        y = y * b
    if backward:
        y.sum().backward()
    return (time.perf_counter() - t0) / n * 1e6


def bench_small_op(n=2000, runs=5):
    """Per-op overhead through the autograd engine, shardflow vs PyTorch (µs per op)."""
    import shardflow as sf

    torch = _import_torch()
    v = np.random.default_rng(0).standard_normal(16).astype(np.float32)

    out = {}
    for backward in (False, True):
        sf_t, th_t = [], []
        for _ in range(runs):
            a, b = sf.tensor(v, requires_grad=True), sf.tensor(v * 0 + 1.0001, requires_grad=True)
            sf_t.append(small_op_chain(a, b, n, backward))
            ta, tb = torch.tensor(v, requires_grad=True), torch.tensor(v * 0 + 1.0001, requires_grad=True)
            th_t.append(small_op_chain(ta, tb, n, backward))
        key = "fwd+bwd" if backward else "fwd"
        out[key] = (statistics.median(sf_t), statistics.median(th_t))
    return out


def _peer_header(peers, device) -> str:
    parts = []
    for peer in peers:
        if peer == "torch-compile":
            parts.append(f"{engine_torch_compile.NAME} (backend inductor)")
        elif peer == "jax":
            ok, why = engine_jax.available()
            parts.append(f"{engine_jax.NAME} (jax {why})" if ok else f"{engine_jax.NAME} (absent)")
        else:
            parts.append(PEER_LABELS[peer])
    return "; peers: " + ", ".join(parts) if parts else ""


def _print_cold_table(rows, names) -> None:
    """First step and compile cost per workload and column (from the warm-up steps)."""
    print()
    print("first step and compile: the first warm-up step's wall time, and the excess of every "
          "warm-up step over the steady median (tracing, compiling, kernel loads, lazy state)")
    hdr = f"{'workload':<44} {'column':<18} {'first step ms':>13} {'steady ms':>10} {'compile s':>10}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        for name in names:
            if name in r["ms"]:
                print(f"{r['name']:<44} {name:<18} {r['first_step_ms'][name]:>13.1f} "
                      f"{r['ms'][name]:>10.1f} {r['compile_s'][name]:>10.2f}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardflow bench engine", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="mlp,cnn,gpt", help="comma list of: " + ",".join(WORKLOADS))
    p.add_argument("--runs", type=int, default=5, help="timed runs per library (median reported)")
    p.add_argument("--steps", type=int, default=None, help="steps per run (default per model)")
    p.add_argument("--warmup", type=int, default=2,
                   help="untimed warm-up steps per column (their excess is the compile column)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: both libraries on the GPU (adds the gpt-l workload by default)")
    p.add_argument("--peers", default="torch",
                   help="comma list of extra columns: torch-compile (torch.compile, inductor), jax "
                        "(jax.jit; needs the bench extra), sf-compile (shardflow.jit.compile_step), "
                        "or all; PyTorch eager always runs (default: torch only, the fast run)")
    p.add_argument("--compile", action="store_true", help="same as adding torch-compile to --peers")
    p.add_argument("--numpy-path", action="store_true",
                   help="add a column: shardflow with its fused kernels off (SHARDFLOW_KERNELS=numpy)")
    p.add_argument("--no-small-op", action="store_true", help="skip the per-op overhead line")
    p.add_argument("--peak-tflops", type=float, default=67.0,
                   help="device float32 peak for the MFU column with --device cuda (H100 SXM: 67)")
    return p


def _table_header(labels: list[str], numpy_col: bool, device: str) -> str:
    """The header of the per-workload table: fixed columns, one per peer, then the optional ones."""
    hdr = f"{'workload':<44} {'shardflow ms':>12} {'torch ms':>9} {'ratio':>6} {'sf GFLOP/s':>10} {'th GFLOP/s':>10}"
    for label in labels:
        hdr += f" {label + ' ms':>{max(9, len(label) + 3)}}"
    if labels:
        hdr += f" {'sf/best':>7}"
    if numpy_col:
        hdr += f" {'sf numpy ms':>11} {'kernel gain':>11}"
    if device == "cuda":
        hdr += f" {'sf MFU':>7} {'th MFU':>7} {'sf MiB':>7} {'th MiB':>7}"
    return hdr


def _table_row(r: dict, labels: list[str], numpy_col: bool, device: str, peak_tflops: float) -> str:
    """One workload's line under :func:`_table_header`."""
    line = (f"{r['name']:<44} {r['shardflow_ms']:>12.1f} {r['torch_ms']:>9.1f} {r['ratio']:>6.2f} "
            f"{r['shardflow_gflops']:>10.1f} {r['torch_gflops']:>10.1f}")
    for label in labels:
        cell = f"{r['ms'][label]:.1f}" if label in r["ms"] else "failed"
        line += f" {cell:>{max(9, len(label) + 3)}}"
    if labels:
        others = [v for name, v in r["ms"].items() if name not in ("shardflow", "shardflow (numpy)")]
        line += f" {r['shardflow_ms'] / min(others):>7.2f}"
    if numpy_col:
        line += f" {r['shardflow_numpy_ms']:>11.1f} {r['shardflow_numpy_ms'] / r['shardflow_ms']:>10.2f}x"
    if device == "cuda":
        peak = peak_tflops * 1e3
        line += (f" {r['shardflow_gflops'] / peak:>7.1%} {r['torch_gflops'] / peak:>7.1%} "
                 f"{r['shardflow_peak_bytes'] / 2**20:>7.0f} {r['torch_peak_bytes'] / 2**20:>7.0f}")
    return line


def _print_small_op(ops: dict) -> None:
    print()
    print(f"{'small op (16 elems, requires_grad)':<44} {'shardflow us':>12} {'torch us':>9} {'ratio':>6}")
    for key, (s, t) in ops.items():
        print(f"{'  x = x * w, ' + key + ' per op':<44} {s:>12.2f} {t:>9.2f} {s / t:>6.2f}")


def main(argv=None) -> int:
    """Phases: parse and check the arguments, time each workload (one table line each), the
    cold-start table and failures, the kernel compile report and the per-op overhead (CPU),
    then the JSON file."""
    p = _parser()
    args = p.parse_args(argv)
    try:
        peers = parse_peers(args.peers + (",torch-compile" if args.compile else ""))
    except ValueError as e:
        p.error(str(e))
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
          f"{torch.__version__}, {torch.get_num_threads()} torch threads{_peer_header(peers, args.device)}")
    labels = [PEER_LABELS[peer] for peer in peers]
    numpy_col = args.numpy_path and args.device == "cpu"
    hdr = _table_header(labels, numpy_col, args.device)
    print(hdr)
    print("-" * len(hdr))
    for k in keys:
        r = bench_workload(k, runs=args.runs, steps=args.steps, warmup=args.warmup, device=args.device,
                           numpy_path=numpy_col, peers=peers)
        rows.append(r)
        print(_table_row(r, labels, numpy_col, args.device, args.peak_tflops), flush=True)
    _print_cold_table(rows, ["shardflow", "torch", *labels])
    for r in rows:
        for name, why in r["failed"].items():
            print(f"{name} on {r['name']}: {why}")
    out = {"workloads": rows, "peers": list(peers)}
    if args.device == "cpu":
        from shardflow import kernels

        report = kernels.format_compile_report()
        if report:
            print(report)
    if args.device == "cpu" and not args.no_small_op:
        ops = bench_small_op(runs=args.runs)
        out["small_op_us"] = ops
        _print_small_op(ops)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0
