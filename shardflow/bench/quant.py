"""``shardflow bench quant``: int8 against float32 — GEMM speed, layer speed, model size,
int8 inference — with PyTorch's int8 kernels (FBGEMM, x86 engine) in the same process.

1. **int8 GEMM** ``(M, K) x (K, N)``, int32 accumulation: shardflow's three backends
   (``blas``: exact float32-BLAS chunks, the default; ``numba``: compiled int32 loop, if
   installed; ``numpy``: ``np.matmul`` on int32) against the float32 GEMM of the same shape
   (NumPy/OpenBLAS) and against PyTorch's float32 GEMM and its dynamic int8 Linear kernel
   (``quantized::linear_dynamic``, which also quantizes the activations).
2. **Dynamic Linear layer**: ``quantize_dynamic`` output layer vs the float ``nn.Linear``
   (activation quantization included), shardflow and PyTorch.
3. **Model size**: bytes of the float32 state_dict against the int8 (static) one.
4. **LeNet-5 inference**, batch 256: float32 vs static int8, shardflow and PyTorch.

Each row is the median of ``--runs`` timings; variants of a row alternate so the machine's
noise hits all of them. The machine is shared: compare the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

SHAPES = [(64, 784, 512), (256, 1024, 1024), (1024, 512, 512)]


def _time_all(fns: dict, runs: int, repeat: int = 1) -> dict:
    """Median seconds per call of each function; the functions alternate within a run."""
    for f in fns.values():
        f()  # warm-up (compilation, allocator)
    times = {k: [] for k in fns}
    for _ in range(runs):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(repeat):
                f()
            times[k].append((time.perf_counter() - t0) / repeat)
    return {k: statistics.median(v) for k, v in times.items()}


def _fmt(t):
    return f"{t * 1e3:8.2f}"


def _gemm_row(m, k, n, runs, has_numba) -> dict:
    import torch

    from ..quant import int8_gemm

    rng = np.random.default_rng(0)
    a = rng.integers(0, 128, (m, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    af, wf = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    at, wt = torch.from_numpy(af), torch.from_numpy(wf)
    tq_lin = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(k, n)))[0]
    fns = {
        "f32 numpy": lambda: af @ wf.T,
        "f32 torch": lambda: at @ wt.T,
        "int8 blas": lambda: int8_gemm.int8_matmul(a, 3, w, 0, backend="blas"),
        "torch int8 dyn": lambda: tq_lin(at),
    }
    if has_numba:
        fns["int8 numba"] = lambda: int8_gemm.int8_matmul(a, 3, w, 0, backend="numba")
    slow = _time_all({"int8 numpy": lambda: int8_gemm.int8_matmul(a, 3, w, 0, backend="numpy")}, 1)
    return {**_time_all(fns, runs), **slow}


def bench_gemm(runs: int, shapes) -> None:
    from ..quant import int8_gemm

    has_numba = True
    try:
        int8_gemm._get_numba_kernel()
    except ImportError:
        has_numba = False
    print("\n## int8 GEMM (ms; ratio = time / float32 NumPy GEMM of the same shape)\n")
    cols = ["f32 numpy", "f32 torch", "int8 blas", "int8 numba", "int8 numpy", "torch int8 dyn"]
    print("| M, K, N | " + " | ".join(cols) + " | int8 blas / f32 | torch int8 / torch f32 |")
    print("|---" * (len(cols) + 3) + "|")
    for m, k, n in shapes:
        t = _gemm_row(m, k, n, runs, has_numba)
        cells = [_fmt(t[c]) if c in t else "   n/a" for c in cols]
        print(f"| {m}, {k}, {n} | " + " | ".join(cells)
              + f" | {t['int8 blas'] / t['f32 numpy']:.2f} | {t['torch int8 dyn'] / t['f32 torch']:.2f} |")
    if not has_numba:
        print("\n(numba is not installed: `pip install numba` adds the numba column)")


def bench_dynamic_linear(runs: int) -> None:
    import torch

    import shardflow as sf
    from shardflow.ao import quantization as Q

    print("\n## dynamic int8 Linear vs float32 Linear, 256 x 1024 -> 1024 (ms)\n")
    print("| library | float32 | dynamic int8 | int8 / float32 |")
    print("|---|---|---|---|")
    x = np.random.default_rng(1).standard_normal((256, 1024)).astype(np.float32)
    sf.manual_seed(0)
    lin = sf.nn.Sequential(sf.nn.Linear(1024, 1024))
    qlin = Q.quantize_dynamic(lin)
    tl = torch.nn.Sequential(torch.nn.Linear(1024, 1024))
    tql = torch.ao.quantization.quantize_dynamic(tl)
    xs, xt = sf.tensor(x), torch.from_numpy(x)
    with sf.no_grad(), torch.no_grad():
        t = _time_all({"sf f": lambda: lin(xs), "sf q": lambda: qlin(xs), "t f": lambda: tl(xt),
                       "t q": lambda: tql(xt)}, runs)
    print(f"| shardflow | {_fmt(t['sf f'])} | {_fmt(t['sf q'])} | {t['sf q'] / t['sf f']:.2f} |")
    print(f"| PyTorch | {_fmt(t['t f'])} | {_fmt(t['t q'])} | {t['t q'] / t['t f']:.2f} |")


def _static_lenet(seed=0):
    import shardflow as sf
    from shardflow.ao import quantization as Q
    from shardflow.models import LeNet5

    sf.manual_seed(seed)
    model = LeNet5().eval()
    w = Q.QuantWrapper(model)
    w.qconfig = Q.get_default_qconfig("x86")
    p = Q.prepare(w)
    with sf.no_grad():
        p(sf.tensor(np.random.default_rng(0).random((64, 1, 28, 28), dtype=np.float32)))
    return model, Q.convert(p)


def _torch_lenet(sd):
    import torch
    from torch import nn

    m = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
                      nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    m.load_state_dict({k2: torch.from_numpy(v.numpy().copy()) for k2, v in zip(m.state_dict(), sd.values())})
    w = torch.ao.quantization.QuantWrapper(m.eval())
    w.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    p = torch.ao.quantization.prepare(w)
    p(torch.from_numpy(np.random.default_rng(0).random((64, 1, 28, 28), dtype=np.float32)))
    return m, torch.ao.quantization.convert(p)


def bench_models(runs: int) -> None:
    import torch

    import shardflow as sf
    from shardflow.ao import quantization as Q
    from shardflow.models import MLP

    print("\n## model size (state_dict bytes)\n")
    print("| model | float32 | int8 | int8 / float32 |")
    print("|---|---|---|---|")
    sf.manual_seed(0)
    mlp = MLP().eval()
    w = Q.QuantWrapper(mlp)
    w.qconfig = Q.get_default_qconfig("x86")
    p = Q.prepare(w)
    with sf.no_grad():
        p(sf.randn(32, 784))
    qmlp = Q.convert(p)
    lenet, qlenet = _static_lenet()
    for name, f, q in (("MLP 784-512-256-10", mlp, qmlp), ("LeNet-5", lenet, qlenet)):
        fb = sum(v.numpy().nbytes for v in f.state_dict().values())
        qb = sum(v.numpy().nbytes for v in q.state_dict().values())
        print(f"| {name} | {fb:,} | {qb:,} | {qb / fb:.3f} |")
    print("\n## LeNet-5 inference, batch 256 (ms)\n")
    print("| library | float32 | static int8 | int8 / float32 |")
    print("|---|---|---|---|")
    tf, tqm = _torch_lenet(lenet.state_dict())
    x = np.random.default_rng(2).random((256, 1, 28, 28), dtype=np.float32)
    xs, xt = sf.tensor(x), torch.from_numpy(x)
    with sf.no_grad(), torch.no_grad():
        t = _time_all({"sf f": lambda: lenet(xs), "sf q": lambda: qlenet(xs), "t f": lambda: tf(xt),
                       "t q": lambda: tqm(xt)}, runs)
    print(f"| shardflow | {_fmt(t['sf f'])} | {_fmt(t['sf q'])} | {t['sf q'] / t['sf f']:.2f} |")
    print(f"| PyTorch (x86 engine) | {_fmt(t['t f'])} | {_fmt(t['t q'])} | {t['t q'] / t['t f']:.2f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="shardflow bench quant", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="timings per row (median reported)")
    p.add_argument("--quick", action="store_true", help="one GEMM shape, 3 runs")
    args = p.parse_args(argv)
    import torch

    warnings.filterwarnings("ignore", module="torch")
    warnings.filterwarnings("ignore", message=".*deprecated.*")
    torch.backends.quantized.engine = "x86"
    runs = 3 if args.quick else args.runs
    print(f"# shardflow bench quant (torch {torch.__version__}, {torch.get_num_threads()} torch threads, "
          f"median of {runs} runs)")
    bench_gemm(runs, SHAPES[:1] if args.quick else SHAPES)
    bench_dynamic_linear(runs)
    bench_models(runs)
    return 0
